package gateway

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/ringview"
)

// multiHost adds captures on two hosts to the sample archive.
func multiHost(t testing.TB) *listingArchive {
	f := sampleArchive(t)
	f.add(t, "http://other.example:8080/", "20210101000000", 200, "text/html", "o1")
	f.add(t, "https://example.com/secure", "20230101000000", 200, "text/html", "s1")
	return &listingArchive{fakeArchive: f}
}

func cdxLines(t *testing.T, s http.Handler, q string) (int, []string) {
	t.Helper()
	w := get(t, s, "/cdx?"+q)
	body := strings.TrimSpace(w.Body.String())
	if body == "" {
		return w.Code, nil
	}
	return w.Code, strings.Split(body, "\n")
}

func TestCDX(t *testing.T) {
	s := newServer(t, multiHost(t))
	for _, tc := range []struct {
		q     string
		code  int
		lines int
		first string
	}{
		{"url=example.com", 200, 3, `com,example)/ 20200101120000 {"url":"http://example.com/","mime":"text/html","status":"200"`},
		{"url=example.com&from=2021&to=2021", 200, 1, "com,example)/ 20210615000000"},
		{"url=example.com&limit=2", 200, 2, "com,example)/ 20200101120000"},
		{"url=http://example.com/*", 200, 7, "com,example)/ 20200101120000"},
		{"url=example.com/img/&matchType=prefix", 200, 1, "com,example)/img/x.png 20210615000002"},
		{"url=example.com&matchType=host", 200, 8, "com,example)/ 20200101120000"},
		{"url=other.example:8080&matchType=host", 200, 1, "example,other:8080)/ 20210101000000"},
		{"url=nothing.example", 200, 0, ""},
		{"", 400, 1, "url is required"},
		{"url=example.com&matchType=domain", 200, 8, "com,example)/ 20200101120000"},
		{"url=example.com&matchType=subdomain", 400, 1, "matchType"},
		{"url=example.com&from=20x", 400, 1, "from"},
		{"url=example.com&limit=-1", 200, 1, "com,example)/ 20220301080000"},
		{"url=example.com&limit=x", 400, 1, "limit"},
		{"url=example.com&output=xml", 400, 1, "output"},
		{"url=ftp://example.com/", 400, 1, "not http"},
		{"url=example.com/*&filter=mime:text/.*", 200, 6, "com,example)/ 2020"},
		{"url=example.com/*&filter=!mime:text/.*", 200, 1, "com,example)/img/x.png"},
		{"url=example.com/*&filter==status:301", 200, 1, "com,example)/old"},
		{"url=example.com/*&filter=~url:css&filter=status:2..", 200, 1, "com,example)/s.css"},
		{"url=example.com/*&filter=mime:text/.*&limit=2", 200, 2, "com,example)/ 2020"},
		{"url=example.com&filter=size:1", 400, 1, "filter"},
		{"url=example.com&filter=mime:(", 400, 1, "regexp"},
	} {
		code, lines := cdxLines(t, s, tc.q)
		if code != tc.code || len(lines) != tc.lines || (tc.lines > 0 && !strings.Contains(lines[0], tc.first)) {
			t.Errorf("cdx?%s: %d with %d lines %q; want %d, %d lines, first containing %q", tc.q, code, len(lines), lines, tc.code, tc.lines, tc.first)
		}
	}
	_, lines := cdxLines(t, s, "url=example.com&output=ndjson&limit=1")
	var rec map[string]string
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil {
		t.Fatalf("ndjson output: %q", lines)
	}
	if rec["urlkey"] != "com,example)/" || rec["timestamp"] != "20200101120000" || rec["status"] != "200" ||
		len(rec["digest"]) != 32 || rec["length"] == "" || rec["filename"] == "" {
		t.Errorf("ndjson record: %v", rec)
	}
}

func TestCDXWithoutLister(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	if code, _ := cdxLines(t, s, "url=example.com"); code != 200 {
		t.Errorf("exact without Lister: %d", code)
	}
	code, lines := cdxLines(t, s, "url=example.com/*")
	if code != http.StatusNotImplemented || !strings.Contains(strings.Join(lines, ""), "matchType=exact") {
		t.Errorf("prefix without Lister: %d %q", code, lines)
	}
	if w := get(t, s, "/web/*/http://example.com/*"); w.Code != http.StatusNotImplemented {
		t.Errorf("prefix listing without Lister: %d", w.Code)
	}
}

func TestPrefixListing(t *testing.T) {
	s := newServer(t, multiHost(t))
	w := get(t, s, "/web/*/http://example.com/*")
	body := w.Body.String()
	for _, want := range []string{`href="/web/*/http://example.com/img/x.png"`, `href="/web/20220301080000/http://example.com/"`, "5 URLs"} {
		if !strings.Contains(body, want) {
			t.Errorf("prefix page lacks %q:\n%s", want, body)
		}
	}
	if w := get(t, s, "/web/*/http://none.example/*"); w.Code != 404 {
		t.Errorf("empty prefix: %d", w.Code)
	}
}

// exportRequest runs an export through a real HTTP server, so that
// trailers travel as they would to a client.
func exportRequest(t *testing.T, s http.Handler, q string) (int, []string, http.Header) {
	t.Helper()
	ts := httptest.NewServer(s)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/export?" + q)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		body = skipWARCInfo(t, q, body)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, lines, resp.Trailer
}

func TestExportResume(t *testing.T) {
	a := multiHost(t)
	s := newServer(t, a)
	code, all, tr := exportRequest(t, s, "host=example.com")
	if code != 200 || len(all) != 8 || tr.Get(TrailerExportStatus) != "complete" {
		t.Fatalf("export: %d, %d records, trailer %v", code, len(all), tr)
	}
	// Resume after the third record: the rest comes, nothing twice.
	cursor := strings.TrimPrefix(all[2], "REC ")
	_, rest, tr := exportRequest(t, s, "host=example.com&after="+url.QueryEscape(cursor))
	if strings.Join(append(all[:3:3], rest...), "\n") != strings.Join(all, "\n") || tr.Get(TrailerExportStatus) != "complete" {
		t.Errorf("resumed export:\n%q\nwant the tail of\n%q", rest, all)
	}
	// A failure mid-stream ends with an error trailer, after the records
	// that were complete.
	a.exportErrAfter = 2
	_, part, tr := exportRequest(t, s, "prefix=http://example.com/")
	if len(part) != 2 || tr.Get(TrailerExportStatus) != "error" || !strings.Contains(tr.Get(TrailerExportError), "unreachable") {
		t.Errorf("failed export: %q, trailer %v", part, tr)
	}
	for _, q := range []string{"", "host=a.example&prefix=http://a.example/", "host=ftp://x/", "host=example.com&after=garbage", "url=example.com&from=x"} {
		if code, _, _ := exportRequest(t, s, q); code != 400 {
			t.Errorf("export?%s: %d, want 400", q, code)
		}
	}
}

func TestExportFailsCleanlyBeforeData(t *testing.T) {
	a := multiHost(t)
	a.err = errors.New("unused")
	s := newServer(t, &failingExporter{a})
	code, lines, _ := exportRequest(t, s, "host=example.com")
	if code != http.StatusBadGateway || !strings.Contains(strings.Join(lines, ""), "ring unavailable") {
		t.Errorf("export failing at once: %d %q", code, lines)
	}
}

type failingExporter struct{ *listingArchive }

// progressArchive reports a cursor per record.
type progressArchive struct{ *listingArchive }

func (p progressArchive) ExportProgress(ctx context.Context, q cdx.Query, w io.Writer, after string, progress func(string)) error {
	pw := &progressWriter{w: w, progress: progress}
	return p.Export(ctx, q, pw, after)
}

// progressWriter calls progress with the cursor of each fake record line.
type progressWriter struct {
	w        io.Writer
	progress func(string)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err == nil {
		p.progress(strings.TrimSuffix(strings.TrimPrefix(string(b), "REC "), "\n"))
	}
	return n, err
}

func TestExportProgressTrailer(t *testing.T) {
	s := newServer(t, progressArchive{multiHost(t)})
	_, lines, tr := exportRequest(t, s, "host=example.com&to=2021")
	if len(lines) == 0 || tr.Get(TrailerExportCursor) != strings.TrimPrefix(lines[len(lines)-1], "REC ") || tr.Get(TrailerExportStatus) != "complete" {
		t.Errorf("trailers %v after %q", tr, lines)
	}
}

func (failingExporter) Export(context.Context, cdx.Query, io.Writer, string) error {
	return errors.New("ring unavailable")
}

func TestParseCursor(t *testing.T) {
	tm := time.Date(2021, 6, 15, 1, 2, 3, 0, time.UTC)
	c := archive.WaybackCursor("http://example.com/a b", tm)
	if _, _, err := ParseCursor(c); err == nil {
		t.Errorf("cursor with a space in the URL accepted: %q", c)
	}
	u, got, err := ParseCursor(archive.WaybackCursor("http://example.com/a", tm))
	if err != nil || u != "http://example.com/a" || !got.Equal(tm) {
		t.Errorf("round trip: %q %v %v", u, got, err)
	}
	exact := "http://example.com/a 2021-06-15T01:02:03.5Z " + strings.Repeat("ab", 20)
	if u, got, err := ParseCursor(exact); err != nil || u != "http://example.com/a" || !got.Equal(tm.Add(500*time.Millisecond)) {
		t.Errorf("exact cursor: %q %v %v", u, got, err)
	}
	for _, bad := range []string{"", "x", "http://example.com/ 2021", "http://example.com/ 2021061501020x", "ftp://x/ 20210615010203",
		"http://example.com/a 2021-06-15T01:02:03Z", "http://example.com/a 2021-06-15T01:02:03Z nothex",
		"http://example.com/ " + strings.Repeat("1", 5000)} {
		if _, _, err := ParseCursor(bad); !errors.Is(err, ErrQuery) {
			t.Errorf("ParseCursor(%q): %v", bad, err)
		}
	}
}

func TestRingPage(t *testing.T) {
	view := ringview.View{
		Self: "peerA",
		Nodes: []ringview.Node{
			{ID: "4000000000000000000000000000000000000000", Index: 0, Peer: "peerA", Addr: "/ip4/127.0.0.1/tcp/1", Local: true,
				Successors: []string{"8000000000000000000000000000000000000000"}, Predecessor: "c000000000000000000000000000000000000000"},
			{ID: "8000000000000000000000000000000000000000", Index: 0, Peer: "peerB<script>", Successors: []string{"c000000000000000000000000000000000000000"}},
			{ID: "c000000000000000000000000000000000000000", Index: 1, Peer: "peerA", Local: true,
				Successors: []string{"8000000000000000000000000000000000000000"}}, // wrong: should be 4000…
			{ID: "not-hex", Peer: "peerC"},
		},
		Peers: []ringview.PeerSummary{
			{Peer: "peerA", State: "up", Reach: "listen", Fetched: 12, Stored: 10, Day: 20417, BelowK: 7, LagSec: 42},
			{Peer: "peerB<script>", State: "up", Reach: "mapped", Relayed: true, Versions: 99},
			{Peer: "peerC", State: "unreachable"},
		},
	}
	s := newServer(t, newFake(), func(c *Config) { c.Ring, c.PublicStatus = func(context.Context) ringview.View { return view }, true })
	w := get(t, s, "/ring")
	body := w.Body.String()
	for _, want := range []string{"<svg", "2 of 3 nodes up · 7 versions with fewer than k copies", "3 virtual servers known here", "1 successor pointer disagree", "successor should be 40000000",
		"peerB&lt;script&gt;", "(this node)", "<path d=\"M", `<td title="day 20417">20417</td>`, "<td>7</td><td>42 s</td>",
		"<b>relayed</b>, behind NAT (mapped)", "<b>unreachable</b>", "no answer"} {
		if !strings.Contains(body, want) {
			t.Errorf("ring page lacks %q", want)
		}
	}
	if strings.Contains(body, "peerB<script>") {
		t.Error("ring page does not escape peer names")
	}
	var got ringview.View
	if err := json.Unmarshal(get(t, s, "/ring?format=json").Body.Bytes(), &got); err != nil || len(got.Nodes) != 4 {
		t.Errorf("ring json: %v %+v", err, got)
	}
}

func TestRingGeometry(t *testing.T) {
	for _, tc := range []struct {
		id   string
		x, y float64
	}{
		{"0000000000000000000000000000000000000000", ringSize / 2, ringSize/2 - ringRadius},
		{"4000000000000000000000000000000000000000", ringSize/2 + ringRadius, ringSize / 2},
		{"8000000000000000000000000000000000000000", ringSize / 2, ringSize/2 + ringRadius},
	} {
		f, ok := angle(tc.id)
		x, y := point(f, ringRadius)
		if !ok || abs(x-tc.x) > 1e-6 || abs(y-tc.y) > 1e-6 {
			t.Errorf("%s at (%.2f, %.2f), want (%.2f, %.2f)", tc.id[:4], x, y, tc.x, tc.y)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestRingRemoteStateUnknown: a remote virtual server whose successors this
// node does not know is neither counted as broken nor shown with zeros.
func TestRingRemoteStateUnknown(t *testing.T) {
	a := strings.Repeat("1", 40)
	b := strings.Repeat("8", 40)
	d := buildRing(ringview.View{Self: "p1", Nodes: []ringview.Node{
		{ID: a, Peer: "p1", Local: true, Successors: []string{b}},
		{ID: b, Peer: "p2"},
	}, Peers: []ringview.PeerSummary{{Peer: "p1", Versions: 3}}}, time.Time{})
	if d.Broken != 0 {
		t.Fatalf("Broken = %d, want 0: a remote node's unknown state is not a disagreement", d.Broken)
	}
	for _, p := range d.Peers {
		if p.Known != (p.Peer == "p1") {
			t.Errorf("peer %s Known = %v", p.Peer, p.Known)
		}
	}
	local := ringview.View{Self: "p1", Nodes: []ringview.Node{{ID: a, Peer: "p1", Local: true, Successors: []string{a}}, {ID: b, Peer: "p2"}}}
	if d := buildRing(local, time.Time{}); d.Broken != 1 {
		t.Fatalf("a local successor pointer that skips a node: Broken = %d, want 1", d.Broken)
	}
}

func TestParseExportQueryRevisits(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
		ok   bool
	}{
		{"host=example.com", false, true},
		{"host=example.com&revisits=1", true, true},
		{"host=example.com&revisits=true", true, true},
		{"host=example.com&revisits=0", false, true},
		{"host=example.com&revisits=maybe", false, false},
	} {
		p, _ := url.ParseQuery(tc.q)
		q, err := ParseExportQuery(p)
		if (err == nil) != tc.ok || (err == nil && q.Revisits != tc.want) {
			t.Errorf("%s: revisits %v, err %v; want %v, ok %v", tc.q, q.Revisits, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrQuery) {
			t.Errorf("%s: error %v is not ErrQuery", tc.q, err)
		}
	}
}

// skipWARCInfo checks that a fresh WARC export of query q (answered 200)
// starts with its warcinfo record, and that a resumed one or another
// format does not, and returns body without it.
func skipWARCInfo(t *testing.T, q string, body []byte) []byte {
	t.Helper()
	p, _ := url.ParseQuery(q)
	want := p.Get("after") == "" && p.Get("warcinfo") != "0" && (p.Get("format") == "" || p.Get("format") == "warc")
	if len(body) == 0 {
		return body // nothing exported: no warcinfo either
	}
	if !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		if want {
			t.Errorf("export?%s: no warcinfo record first", q)
		}
		return body
	}
	if !want {
		t.Errorf("export?%s: a warcinfo record where none belongs", q)
	}
	br := bytes.NewReader(body)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatalf("export?%s: warcinfo member: %v", q, err)
	}
	zr.Multistream(false)
	rec, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(rec, []byte("WARC-Type: warcinfo\r\n")) || !bytes.Contains(rec, []byte("software: herod")) {
		t.Fatalf("export?%s: first member %q, %v; want a warcinfo record", q, rec, err)
	}
	return body[len(body)-br.Len():]
}
