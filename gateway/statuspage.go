package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The HTML status page, /status: the same status /api/status serves as
// JSON (Config.Status), laid out for a person: the node's own fields
// first, then one section per part (crawl, archive, replication…), each a
// table of its fields, with nested fields under dotted names, lists of
// records as tables, bytes and times formatted. It knows nothing of the
// status's type: any JSON object is shown.

// statusSection is one part of the status page.
type statusSection struct {
	Name string
	Rows [][2]string // name, value
	// Table, when set, is a list of records: Cols heads Table's rows.
	Cols  []string
	Table [][]string
	Open  bool // shown unfolded
}

type statusData struct {
	Sections []statusSection
}

// kv is one member of a JSON object, in order.
type kv struct {
	Key string
	Val json.RawMessage
}

// members returns the members of the JSON object raw, in order, or false
// when raw is not an object.
func members(raw json.RawMessage) ([]kv, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []kv
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, kv{k, v})
	}
	return out, true
}

// maxOpenRows is the size above which a section starts folded.
const maxOpenRows = 16

// statusPage lays out the JSON object raw.
func statusPage(raw json.RawMessage) (statusData, error) {
	top, ok := members(raw)
	if !ok {
		return statusData{}, fmt.Errorf("gateway: status is not a JSON object")
	}
	node := statusSection{Name: "node", Open: true}
	var d statusData
	for _, m := range top {
		v := bytes.TrimSpace(m.Val)
		switch {
		case len(v) > 0 && v[0] == '{':
			sec := statusSection{Name: m.Key}
			flatten(&sec.Rows, "", v)
			sec.Open = len(sec.Rows) <= maxOpenRows
			if len(sec.Rows) > 0 {
				d.Sections = append(d.Sections, sec)
			}
		case len(v) > 0 && v[0] == '[':
			sec := statusSection{Name: m.Key}
			if cols, rows, ok := records(v); ok {
				sec.Cols, sec.Table = cols, rows
				sec.Open = len(rows) <= maxOpenRows
			} else {
				sec.Rows = [][2]string{{m.Key, value(m.Key, v)}}
				sec.Open = true
			}
			if len(sec.Table) > 0 || len(sec.Rows) > 0 {
				d.Sections = append(d.Sections, sec)
			}
		default:
			node.Rows = append(node.Rows, [2]string{m.Key, value(m.Key, v)})
		}
	}
	d.Sections = append([]statusSection{node}, d.Sections...)
	return d, nil
}

// flatten appends the scalar members of the object raw to rows, nested
// ones under dotted names.
func flatten(rows *[][2]string, prefix string, raw json.RawMessage) {
	ms, ok := members(raw)
	if !ok {
		return
	}
	for _, m := range ms {
		v := bytes.TrimSpace(m.Val)
		name := prefix + m.Key
		if len(v) > 0 && v[0] == '{' {
			flatten(rows, name+".", v)
			continue
		}
		*rows = append(*rows, [2]string{name, value(m.Key, v)})
	}
}

// records reads a JSON array of objects as a table: the union of their
// members' names (nested ones dotted), in order of appearance, and one
// row of formatted values per object.
func records(raw json.RawMessage) ([]string, [][]string, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, nil, false
	}
	var cols []string
	idx := map[string]int{}
	objs := make([][][2]string, 0, len(items))
	for _, it := range items {
		if _, ok := members(it); !ok {
			return nil, nil, false
		}
		var rows [][2]string
		flatten(&rows, "", it)
		for _, r := range rows {
			if _, ok := idx[r[0]]; !ok {
				idx[r[0]] = len(cols)
				cols = append(cols, r[0])
			}
		}
		objs = append(objs, rows)
	}
	table := make([][]string, len(objs))
	for i, o := range objs {
		row := make([]string, len(cols))
		for _, r := range o {
			row[idx[r[0]]] = r[1]
		}
		table[i] = row
	}
	return cols, table, true
}

// value formats one JSON value of member key: numbers with thousands
// separators (bytes in binary units when the name says bytes), RFC 3339
// times in UTC, lists of scalars joined, anything else as compact JSON.
func value(key string, v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	switch v[0] {
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			if t.IsZero() || t.Year() <= 1 {
				return "never"
			}
			return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
		}
		return s
	case '[':
		var xs []json.RawMessage
		if json.Unmarshal(v, &xs) == nil {
			parts := make([]string, 0, len(xs))
			for _, x := range xs {
				parts = append(parts, value(key, x))
			}
			return strings.Join(parts, ", ")
		}
	case 't', 'f':
		return string(v)
	}
	if n, err := strconv.ParseFloat(string(v), 64); err == nil {
		if strings.Contains(strings.ToLower(key), "bytes") && n == float64(int64(n)) {
			return FormatBytes(int64(n))
		}
		if n == float64(int64(n)) && !strings.Contains(strings.ToLower(key), "day") {
			return thousands(int64(n))
		}
		if n == float64(int64(n)) {
			return strconv.FormatInt(int64(n), 10)
		}
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

// thousands writes n with thin-space thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// serveStatusPage answers /status: the status as an HTML page.
func (s *Server) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	raw, err := json.Marshal(s.cfg.Status(ctx))
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "The node's status cannot be encoded: "+err.Error(), "")
		return
	}
	d, err := statusPage(raw)
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, err.Error(), "")
		return
	}
	s.render(w, r, http.StatusOK, "status", d)
}
