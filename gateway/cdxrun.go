package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// cdxCap is MaxCDXLimit; tests lower it.
var cdxCap = MaxCDXLimit

// errCDXCap reports a CDX query over the per-request cap.
var errCDXCap = errors.New("gateway: cdx query too large")

// cdxResult is what a CDX request found.
type cdxResult struct {
	rows      []*cdxValues
	resumeKey string // "" when the result is complete
}

// pager returns the Archive's Pager, or a listPager over it.
func (s *Server) pager() Pager {
	if p, ok := s.cfg.Archive.(Pager); ok {
		return p
	}
	return listPager{a: s.cfg.Archive, list: s.list}
}

// runCDX pages through the captures of req, applying filters, collapse
// and the limit, examining at most MaxCDXLimit captures.
func (s *Server) runCDX(ctx context.Context, req *cdxRequest) (*cdxResult, error) {
	pg := s.pager()
	peers := req.needsPeers()
	if req.hasClosest {
		rows, more, err := pg.Page(ctx, cdx.PageRequest{Query: req.q, N: cdxCap, Peers: peers})
		if err != nil {
			return nil, err
		}
		s.fillRanks(ctx, req, rows) // links.go
		if more {
			return nil, capError()
		}
		dist := func(t time.Time) time.Duration { return max(t.Sub(req.closest), req.closest.Sub(t)) }
		slices.SortStableFunc(rows, func(a, b cdx.Row) int {
			return cmpDuration(dist(a.Time), dist(b.Time))
		})
		res := &cdxResult{}
		req.take(res, rows)
		return res, nil
	}
	want := req.limit
	if want < 0 {
		want = -want
	}
	res := &cdxResult{}
	after := req.after
	examined := 0
	for {
		n := cdxCap - examined
		if want > 0 {
			n = min(n, max(want, cdxPageSize))
		}
		rows, more, err := pg.Page(ctx, cdx.PageRequest{Query: req.q, After: after, Reverse: req.reverse, N: n, Peers: peers})
		if err != nil {
			return nil, err
		}
		s.fillRanks(ctx, req, rows) // links.go
		used := req.take(res, rows)
		examined += used
		if used > 0 {
			k := cdx.KeyOf(rows[used-1].Version)
			after = &k
		}
		switch {
		case len(rows) == 0 || (used == len(rows) && !more):
			// complete
		case want > 0 && len(res.rows) >= want:
			if req.showResumeKey {
				res.resumeKey = after.String()
			}
		case examined >= cdxCap:
			if !req.showResumeKey {
				return nil, capError()
			}
			res.resumeKey = after.String()
		default:
			continue
		}
		break
	}
	if req.limit < 0 {
		slices.Reverse(res.rows)
	}
	return res, nil
}

func capError() error {
	return fmt.Errorf("%w: it matches more than %d captures, the most one request examines: "+
		"narrow it (from/to, a longer URL prefix, matchType=host), set a limit, "+
		"or page through it with showResumeKey=true and resumeKey", errCDXCap, cdxCap)
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// take applies filters, collapse and the limit to rows, appending to res,
// and returns how many rows it consumed (all but those after the limit
// was reached).
func (r *cdxRequest) take(res *cdxResult, rows []cdx.Row) int {
	want := r.limit
	if want < 0 {
		want = -want
	}
	for i, row := range rows {
		if want > 0 && len(res.rows) >= want {
			return i
		}
		c := &cdxValues{row: row, surt: archive.Surt(row.URL)}
		if !r.filters.match(c) {
			continue
		}
		if r.collapse != "" && len(res.rows) > 0 && r.collapseKey(res.rows[len(res.rows)-1]) == r.collapseKey(c) {
			continue
		}
		res.rows = append(res.rows, c)
	}
	return len(rows)
}

// render writes the result in the requested output.
func (r *cdxRequest) render(res *cdxResult, uiOrigin string) ([]byte, string) {
	var b bytes.Buffer
	switch r.output {
	case "json":
		all := [][]string{r.fl}
		for _, c := range res.rows {
			vals := make([]string, len(r.fl))
			for i, f := range r.fl {
				vals[i] = c.get(f)
			}
			all = append(all, vals)
		}
		if res.resumeKey != "" {
			all = append(all, []string{}, []string{res.resumeKey})
		}
		if len(res.rows) == 0 && res.resumeKey == "" {
			all = [][]string{} // the Wayback CDX server's empty result
		}
		j, _ := json.Marshal(all) // strings only: cannot fail
		b.Write(j)
		b.WriteByte('\n')
		return b.Bytes(), "application/json"
	case "link":
		for i, c := range res.rows {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "<%s%s>; rel=\"memento\"; datetime=\"%s\"", uiOrigin, webPath(FormatTimestamp(c.row.Time), "", c.row.URL),
				c.row.Time.UTC().Format(http.TimeFormat))
		}
		if len(res.rows) > 0 {
			b.WriteByte('\n')
		}
		return b.Bytes(), "application/link-format"
	}
	for _, c := range res.rows {
		switch r.output {
		case "text":
			for i, f := range r.fl {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(textValue(c.get(f)))
			}
			b.WriteByte('\n')
		case "ndjson":
			writeObject(&b, c, r.fl, false)
		default: // cdxj
			b.WriteString(c.surt + " " + FormatTimestamp(c.row.Time) + " ")
			writeObject(&b, c, r.fl, true)
		}
	}
	if res.resumeKey != "" {
		b.WriteString("\n" + res.resumeKey + "\n")
	}
	ctype := map[string]string{"text": "text/plain; charset=utf-8", "ndjson": "application/x-ndjson", "cdxj": "text/x-cdxj"}[r.output]
	return b.Bytes(), ctype
}

// textValue is a value as one space-separated text field: "-" if empty,
// spaces escaped.
func textValue(v string) string {
	if v == "" {
		return "-"
	}
	return strings.ReplaceAll(v, " ", "%20")
}

// writeObject writes the fields of c as one JSON object line, with pywb's
// names; cdxj leaves out urlkey and timestamp, which precede it.
func writeObject(b *bytes.Buffer, c *cdxValues, fl []string, cdxj bool) {
	b.WriteByte('{')
	first := true
	for _, f := range fl {
		if cdxj && (f == "urlkey" || f == "timestamp") {
			continue
		}
		v := c.get(f)
		if (f == "peer" || f == "witnesses" || f == "browser" || f == "imported") && v == "" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name := f
		if p, ok := pywbNames[f]; ok {
			name = p
		}
		k, _ := json.Marshal(name)
		j, _ := json.Marshal(v)
		if f == "witnesses" {
			j = witnessesJSON(c.row.Witnesses)
		}
		if f == "imported" {
			j, _ = json.Marshal(cdxImport{From: c.row.Imported.From, Record: c.row.Imported.Record, At: FormatTimestamp(c.row.Imported.At)})
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(j)
	}
	b.WriteString("}\n")
}

// cdxWitness is a witness statement as cdxj and ndjson show it.
type cdxWitness struct {
	Peer string `json:"peer"`
	Seen string `json:"seen"` // a CDX timestamp
}

// witnessesJSON is the JSON array of ws, as cdxj and ndjson show them.
func witnessesJSON(ws []archive.Witness) []byte {
	out := make([]cdxWitness, len(ws))
	for i, w := range ws {
		out[i] = cdxWitness{Peer: w.Peer, Seen: FormatTimestamp(w.Seen)}
	}
	j, _ := json.Marshal(out) // strings only: cannot fail
	return j
}

// hostOf returns the host (with port) of a canonical URL, "" if none.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// badRequest answers an API request with 400 and a plain-text reason.
func (s *Server) badRequest(w http.ResponseWriter, msg string) {
	s.countStatus(http.StatusBadRequest)
	http.Error(w, msg, http.StatusBadRequest)
}
