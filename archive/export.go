package archive

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
)

// ExportOptions select and shape an export.
type ExportOptions struct {
	Query
	// Revisits adds an identical-payload-digest revisit record for each
	// day on which a URL was checked and found unchanged (see Touch).
	Revisits bool
	// Filename is the WARC file name that CDXJ lines refer to; empty means
	// "herod.warc.gz".
	Filename string
	// After resumes an interrupted export: records up to and including
	// this cursor (ExportStats.Cursor, or a value passed to Progress) are
	// skipped. The Wayback-style "url YYYYMMDDhhmmss" (WARC-Target-URI and
	// WARC-Date of the last record received) is accepted too. CDXJ offsets
	// then count from the start of the new stream.
	After string
	// Progress, if non-nil, is called after each record is written with
	// the cursor that resumes after it.
	Progress func(cursor string)
	// Dated leaves out the versions the store does not show as of their
	// dates (Shown: unwitnessed, witness.go).
	Dated bool
	// Hide, if set, names captures to leave out (the node's access rules,
	// archive/access): a response at its time, a revisit at its own time
	// or at the time of the version it refers to.
	Hide func(url string, t time.Time) bool
}

// ExportStats summarizes an export.
type ExportStats struct {
	Responses int      `json:"responses"`
	Revisits  int      `json:"revisits"`
	Requests  int      `json:"requests,omitempty"` // request records, written before their responses
	Bytes     int64    `json:"bytes"`              // WARC bytes written
	Cursor    string   `json:"cursor,omitempty"`   // resumes after the last record written
	Corrupt   []string `json:"corrupt,omitempty"`  // files skipped because they failed verification
}

// CDXJLine is one CDXJ index line, as Export writes it and
// exchange.Index builds it for a ring-wide stream; the JSON field order
// follows pywb and warcio. SURT and TS are the line's key, written before
// the JSON.
type CDXJLine struct {
	SURT     string `json:"-"`
	TS       string `json:"-"` // YYYYMMDDhhmmss
	URL      string `json:"url"`
	Mime     string `json:"mime,omitempty"`
	Status   string `json:"status"`
	Digest   string `json:"digest"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
	Browser  string `json:"browser,omitempty"` // "1": captured in a browser (Version.Browser)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Cursor is a position in export order (host, URL, capture time, payload
// digest), the order of Export and of the ring-wide export merge. Its
// text (String) is the exact resume cursor of ExportOptions.After.
type Cursor struct {
	Host   string // lower case, as hostOf
	URL    string
	Time   time.Time
	Digest id.ID
}

// CursorOf returns the position of the version of u captured at t with
// payload digest d.
func CursorOf(u string, t time.Time, d id.ID) Cursor {
	return Cursor{Host: hostOf(u), URL: u, Time: t, Digest: d}
}

// String returns the exact cursor text, "url RFC3339Nano-time digest-hex".
func (c Cursor) String() string {
	return c.URL + " " + c.Time.Format(time.RFC3339Nano) + " " + c.Digest.String()
}

// WaybackCursor returns the Wayback form of a resume cursor, "url
// YYYYMMDDhhmmss" (UTC): resuming after it skips every record of url
// captured up to the end of that second.
func WaybackCursor(u string, t time.Time) string {
	return u + " " + t.UTC().Format("20060102150405")
}

// maxCursorLen bounds a cursor's text: a URL, a time and a digest.
const maxCursorLen = canon.MaxLen + 128

// ParseCursor accepts the exact form "url RFC3339Nano-time digest-hex"
// (Cursor.String) and the coarser Wayback form "url YYYYMMDDhhmmss"
// (WaybackCursor), which resumes after every record of url captured up to
// the end of that second. It checks the form, not the URL.
func ParseCursor(s string) (Cursor, error) {
	if len(s) > maxCursorLen {
		return Cursor{}, fmt.Errorf("cursor of %d bytes", len(s))
	}
	u, rest, ok := strings.Cut(s, " ")
	if u == "" {
		return Cursor{}, fmt.Errorf("bad cursor %.80q: no url", s)
	}
	if ok && len(rest) == 14 && strings.Trim(rest, "0123456789") == "" {
		t, err := time.Parse("20060102150405", rest)
		if err == nil {
			return Cursor{Host: hostOf(u), URL: u, Time: t.Add(time.Second - 1), Digest: maxID}, nil
		}
	}
	ts, ds, ok2 := strings.Cut(rest, " ")
	t, err1 := time.Parse(time.RFC3339Nano, ts)
	d, err2 := id.Parse(ds)
	if !ok || !ok2 || err1 != nil || err2 != nil {
		return Cursor{}, fmt.Errorf("bad cursor %.80q", s)
	}
	return Cursor{Host: hostOf(u), URL: u, Time: t, Digest: d}, nil
}

// Compare orders cursors in export order.
func (c Cursor) Compare(o Cursor) int {
	return cmp.Or(strings.Compare(c.Host, o.Host), strings.Compare(c.URL, o.URL), c.Time.Compare(o.Time), c.Digest.Cmp(o.Digest))
}

// exportEvent is one record to write: a stored version, or a revisit of
// ref at time t.
type exportEvent struct {
	v           Version
	revisit     bool
	notModified bool // the revisit was a 304 (server-not-modified)
	t           time.Time
}

// Export writes the versions selected by o as one WARC stream to warc
// (every record its own gzip member: those of .warc.gz segments verbatim,
// those of .warc.zst segments gzipped again)
// and, if cdxj is non-nil, a sorted CDXJ index of that stream. Records
// come in host, URL, time order. A file that fails verification is
// skipped, logged and listed in ExportStats.Corrupt.
func (s *Store) Export(ctx context.Context, o ExportOptions, warc, cdxj io.Writer) (ExportStats, error) {
	st := ExportStats{Cursor: o.After}
	if o.Filename == "" {
		o.Filename = "herod.warc.gz"
	}
	var after *Cursor
	if o.After != "" {
		c, err := ParseCursor(o.After)
		if err != nil {
			return st, fmt.Errorf("archive export: %w", err)
		}
		after = &c
	}
	m, err := o.Query.Selector()
	if err != nil {
		return st, fmt.Errorf("archive export: %w", err)
	}
	if o.Latest && o.Revisits {
		return st, fmt.Errorf("archive export: %w: the newest version only has no revisits", ErrSelection)
	}
	cw := &countingWriter{w: warc}
	var lines []CDXJLine
	err = s.urls(ctx, m, func(u string) error {
		if after != nil && strings.Compare(hostOf(u)+"\x00"+u, after.Host+"\x00"+after.URL) < 0 {
			return nil
		}
		events, err := s.urlEvents(ctx, u, o, m)
		if err != nil {
			return err
		}
		heads := make(map[string][]byte)
		for _, ev := range events {
			pos := Cursor{Host: hostOf(u), URL: u, Time: ev.t, Digest: ev.v.Digest}
			if after != nil && pos.Compare(*after) <= 0 {
				continue
			}
			if o.Hide != nil && (o.Hide(u, ev.t) || (ev.revisit && o.Hide(u, ev.v.Time))) {
				continue
			}
			line, err := s.exportOne(ctx, cw, ev, heads, &st)
			if err != nil {
				return err
			}
			if line == nil {
				continue
			}
			if cdxj != nil {
				// Only an index costs memory per record: a stream does not.
				line.Filename = o.Filename
				lines = append(lines, *line)
			}
			st.Cursor = pos.String()
			if o.Progress != nil {
				o.Progress(st.Cursor)
			}
		}
		return nil
	})
	st.Bytes = cw.n
	if err != nil {
		return st, fmt.Errorf("archive export: %w", err)
	}
	if cdxj != nil {
		if _, err := WriteCDXJ(cdxj, lines); err != nil {
			return st, fmt.Errorf("archive export cdxj: %w", err)
		}
	}
	return st, nil
}

// urlEvents lists the records of u to export, in time order: its versions
// the query keeps (m; with Latest the newest of them), and with
// o.Revisits its checks in the query's time bounds on days without a
// version that follow a version the query's version filters keep.
func (s *Store) urlEvents(ctx context.Context, u string, o ExportOptions, m *Selector) ([]exportEvent, error) {
	vs, err := s.Versions(ctx, u)
	if err != nil {
		return nil, err
	}
	var out []exportEvent
	days := make(map[int64]bool)
	for _, v := range vs {
		if o.Dated && !s.Shown(ctx, v) {
			continue
		}
		days[v.Day] = true
		if m.Version(v) {
			out = append(out, exportEvent{v: v, t: v.Time})
		}
	}
	if o.Latest && len(out) > 1 {
		out = out[len(out)-1:]
	}
	if !o.Revisits || len(vs) == 0 {
		return out, nil
	}
	checks, err := s.CheckKinds(ctx, u)
	if err != nil {
		return nil, err
	}
	for _, ck := range checks {
		c := ck.Time
		if days[s.DayOf(c)] || !o.contains(c) {
			continue
		}
		i, _ := slices.BinarySearchFunc(vs, c, func(v Version, t time.Time) int {
			if v.Time.After(t) {
				return 1
			}
			return -1
		})
		if i == 0 {
			continue // checked before the first version: nothing to refer to
		}
		if ref := vs[i-1]; !m.Version(Version{Time: c, Status: ref.Status, ContentType: ref.ContentType}) {
			continue // the version it repeats is filtered out
		}
		out = append(out, exportEvent{v: vs[i-1], revisit: true, notModified: ck.NotModified, t: c})
	}
	slices.SortStableFunc(out, func(a, b exportEvent) int { return a.t.Compare(b.t) })
	return out, nil
}

// exportOne writes one record and returns its CDXJ line, or nil if the
// record was skipped as corrupt.
func (s *Store) exportOne(ctx context.Context, cw *countingWriter, ev exportEvent, heads map[string][]byte, st *ExportStats) (*CDXJLine, error) {
	v := ev.v
	head, req, data, err := s.exportHead(ctx, v, heads, !ev.revisit)
	if err != nil {
		st.Corrupt = append(st.Corrupt, fmt.Sprintf("%s+%d", v.File, v.Offset))
		s.log.Error("export: skipping corrupt record", "file", v.File, "offset", v.Offset, "err", err)
		return nil, nil
	}
	line := &CDXJLine{URL: v.URL, Status: strconv.Itoa(v.Status), Digest: warcDigest(v.Digest)[5:]}
	if ev.revisit {
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		if err := s.gz.encodeRevisit(buf, v, ev.t, head, ev.notModified); err != nil {
			return nil, err
		}
		data = buf.Bytes()
		line.Mime = "warc/revisit"
		if ev.notModified && head != nil {
			line.Status = "304" // the record's HTTP head, as indexers read it
		}
		st.Revisits++
	} else {
		line.Mime = v.ContentType
		if v.Browser {
			line.Browser = "1"
		}
		if len(req) > 0 {
			// The request record goes right before its response, in the
			// same write: the cursor after the response covers both.
			buf := bufPool.Get().(*bytes.Buffer)
			defer bufPool.Put(buf)
			buf.Reset()
			if err := s.gz.encodeRequest(buf, v, req); err != nil {
				return nil, err
			}
			st.Requests++
			line.Offset = strconv.FormatInt(cw.n+int64(buf.Len()), 10)
			line.Length = strconv.Itoa(len(data))
			buf.Write(data)
			data = buf.Bytes()
		}
		st.Responses++
	}
	line.SURT, line.TS = Surt(v.URL), ev.t.UTC().Format("20060102150405")
	if line.Offset == "" { // set already when a request record precedes
		line.Offset = strconv.FormatInt(cw.n, 10)
		line.Length = strconv.Itoa(len(data))
	}
	if _, err := cw.Write(data); err != nil {
		return nil, err
	}
	return line, nil
}

// exportHead reads and verifies the file of v, returning its HTTP head
// (cached per file for later revisits), the request head its capture
// carries (Capture.Request; none for a resource record) and raw bytes.
func (s *Store) exportHead(ctx context.Context, v Version, heads map[string][]byte, needData bool) (head, req, data []byte, err error) {
	at := fmt.Sprintf("%s+%d", v.File, v.Offset)
	if h, ok := heads[at]; ok && !needData {
		return h, nil, nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	data, f, err := s.readMember(v)
	if err != nil {
		return nil, nil, nil, err
	}
	heads[at] = f.head
	if !f.capture.Resource {
		req = f.capture.Request
	}
	return f.head, req, data, nil
}

// WriteCDXJ writes lines sorted by SURT then timestamp, as
// "<surt> <timestamp> <json>" lines, and returns the bytes written.
func WriteCDXJ(w io.Writer, lines []CDXJLine) (int64, error) {
	slices.SortStableFunc(lines, func(a, b CDXJLine) int {
		return cmp.Or(strings.Compare(a.SURT, b.SURT), strings.Compare(a.TS, b.TS))
	})
	var n int64
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		b.Reset()
		b.WriteString(l.SURT)
		b.WriteByte(' ')
		b.WriteString(l.TS)
		b.WriteByte(' ')
		if err := enc.Encode(l); err != nil { // Encode ends the line
			return n, err
		}
		k, err := w.Write(b.Bytes())
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

var wwwPrefix = regexp.MustCompile(`^(https?://)www\d*\.`)

// Surt returns the SURT form of an http(s) URL as CDXJ indexes key it
// (the rules of pywb and warcio): lower case, leading www stripped, host
// labels reversed and comma-separated, ")" before the path, query
// arguments sorted. Other URLs are returned unchanged.
func Surt(raw string) string {
	if !strings.HasPrefix(raw, "http:") && !strings.HasPrefix(raw, "https:") {
		return raw
	}
	lower := strings.ToLower(wwwPrefix.ReplaceAllString(raw, "$1"))
	u, err := url.Parse(lower)
	if err != nil || u.Hostname() == "" {
		return raw
	}
	labels := strings.Split(u.Hostname(), ".")
	slices.Reverse(labels)
	var b strings.Builder
	b.WriteString(strings.Join(labels, ","))
	if p := u.Port(); p != "" && !(p == "80" && u.Scheme == "http") && !(p == "443" && u.Scheme == "https") {
		b.WriteString(":" + p)
	}
	b.WriteByte(')')
	if p := u.EscapedPath(); p != "" {
		b.WriteString(p)
	} else {
		b.WriteByte('/')
	}
	if u.RawQuery != "" {
		args := strings.Split(u.RawQuery, "&")
		slices.Sort(args)
		b.WriteString("?" + strings.Join(args, "&"))
	}
	return b.String()
}
