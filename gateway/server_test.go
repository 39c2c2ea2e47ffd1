package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/archive"
)

const page = "http://example.com/"

// sampleArchive holds three versions of page, a stylesheet, an image, a
// redirect and a gzip-encoded page.
func sampleArchive(t testing.TB) *fakeArchive {
	f := newFake()
	for _, v := range []struct{ ts, body string }{
		{"20200101120000", `<html><head><title>v1</title></head><body><a href="/a">A</a> first</body></html>`},
		{"20210615000000", `<html><head><title>v2</title><link rel=stylesheet href="s.css"></head><body><a href="/a">A</a> <img src="img/x.png"> second</body></html>`},
		{"20220301080000", `<html><body>third</body></html>`},
	} {
		f.add(t, page, v.ts, 200, "text/html; charset=utf-8", v.body, "Set-Cookie", "sid=1", "Server", "origin/1")
	}
	f.add(t, "http://example.com/s.css", "20210615000001", 200, "text/css", `body{background:url(bg.png)}`)
	f.add(t, "http://example.com/img/x.png", "20210615000002", 200, "image/png", "\x89PNG\r\n\x1a\nRAW")
	f.add(t, "http://example.com/old", "20210101000000", 301, "text/html", "moved", "Location", "/new#top")
	f.add(t, "http://example.com/raw", "20210101000000", 200, "text/html", `<a href="/x">raw</a>`)
	return f
}

func TestReplaySelection(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	for _, tc := range []struct {
		ts, want, memento string
	}{
		{"20200101120000", "first", "Wed, 01 Jan 2020 12:00:00 GMT"},
		{"20210615000000", "second", "Tue, 15 Jun 2021 00:00:00 GMT"},
		{"2021", "second", "Tue, 15 Jun 2021 00:00:00 GMT"}, // padded to the end of 2021
		{"202106", "second", "Tue, 15 Jun 2021 00:00:00 GMT"},
		{"20210614", "first", "Wed, 01 Jan 2020 12:00:00 GMT"},
		{"20210615", "second", "Tue, 15 Jun 2021 00:00:00 GMT"},
		{"2030", "third", "Tue, 01 Mar 2022 08:00:00 GMT"},
		{"1999", "first", "Wed, 01 Jan 2020 12:00:00 GMT"}, // all newer: the oldest
	} {
		t.Run(tc.ts, func(t *testing.T) {
			w := get(t, s, "/web/"+tc.ts+"/"+page)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("body %q lacks %q", w.Body, tc.want)
			}
			if got := w.Header().Get("Memento-Datetime"); got != tc.memento {
				t.Errorf("Memento-Datetime = %q, want %q", got, tc.memento)
			}
		})
	}
}

func TestReplayRewritesAndBanner(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := get(t, s, "/web/2021/"+page)
	body := w.Body.String()
	for _, want := range []string{
		`href="/web/2021/http://example.com/a"`,
		`href="/web/2021/http://example.com/s.css"`,
		`src="/web/2021/http://example.com/img/x.png"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("replay lacks %s\n%s", want, body)
		}
	}
	if strings.Contains(body, "herod-banner") {
		t.Errorf("framed replay: banner inside the archived document\n%s", body)
	}
	// The banner is the UI origin's, around a frame of the content origin.
	frame := getUI(t, s, "/web/2021/"+page).Body.String()
	for _, want := range []string{
		`<div id="herod-banner"`,
		`captured <span id="herod-date">2021-06-15 00:00:00</span> UTC`,
		`href="/web/20200101120000/http://example.com/"`, // previous capture
		`href="/web/20220301080000/http://example.com/"`, // next capture
		`>3 captures</a>`,
		`<iframe id="herod-frame" title="archived page" src="http://content.test/web/2021/http://example.com/" sandbox="allow-scripts allow-same-origin`,
	} {
		if !strings.Contains(frame, want) {
			t.Errorf("framed page lacks %s\n%s", want, frame)
		}
	}
	// Frameless: the banner in the document, as before framing.
	fl := newServer(t, sampleArchive(t), func(c *Config) { c.Frameless = true })
	if w := getUI(t, fl, "/web/2021/"+page); w.Code != http.StatusFound || w.Header().Get("Location") != contentOrigin+"/web/2021/"+page {
		t.Errorf("frameless UI replay: %d %v", w.Code, w.Header())
	}
	inline := get(t, fl, "/web/2021/"+page).Body.String()
	for _, want := range []string{`<body><div id="herod-banner"`, `captured 2021-06-15 00:00:00 UTC`, `>3 captures</a>`} {
		if !strings.Contains(inline, want) {
			t.Errorf("frameless replay lacks %s\n%s", want, inline)
		}
	}
	if got := w.Header().Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	if !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("replay without CSP: %v", w.Header())
	}
	if w.Header().Get("Set-Cookie") != "" || w.Header().Get("X-Archive-Orig-Set-Cookie") != "sid=1" {
		t.Errorf("cookie headers: %v", w.Header())
	}
	css := get(t, s, "/web/2021/http://example.com/s.css")
	if got, want := css.Body.String(), `body{background:url(/web/2021/http://example.com/bg.png)}`; got != want {
		t.Errorf("css = %q, want %q", got, want)
	}
	img := get(t, s, "/web/2021/http://example.com/img/x.png")
	if img.Body.String() != "\x89PNG\r\n\x1a\nRAW" || img.Header().Get("Content-Type") != "image/png" {
		t.Errorf("image changed: %q %v", img.Body, img.Header())
	}
}

func TestRawMode(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := get(t, s, "/web/2021id_/http://example.com/raw")
	if w.Code != 200 || w.Body.String() != `<a href="/x">raw</a>` {
		t.Fatalf("id_ = %d %q", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "herod-banner") {
		t.Error("banner in id_ mode")
	}
	if got := w.Header().Get("Content-Length"); got != fmt.Sprint(len(`<a href="/x">raw</a>`)) {
		t.Errorf("Content-Length = %q", got)
	}
	// if_ rewrites without a banner, with the replay script.
	w = get(t, s, "/web/2021if_/http://example.com/raw")
	if got, want := w.Body.String(), string(replayScriptTag("http://example.com/raw", "2021", uiOrigin))+`<a href="/web/2021/http://example.com/x">raw</a>`; got != want {
		t.Errorf("if_ = %q, want %q", got, want)
	}
}

// TestReplayScript checks that rewritten HTML replies load the replay
// script once, before the first element that can run a script, that raw
// and non-HTML replies do not, and that the gateway serves the script.
func TestReplayScript(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	tag := string(replayScriptTag(page, "2021", uiOrigin))
	for _, mod := range []string{"", "mp_", "if_"} {
		body := get(t, s, "/web/2021"+mod+"/"+page).Body.String()
		if strings.Count(body, "/static/replay.js") != 1 || !strings.Contains(body, tag+"</head><body>") {
			t.Errorf("mod %q: replay script missing or misplaced:\n%s", mod, body)
		}
	}
	for _, target := range []string{"/web/2021id_/" + page, "/web/2021/http://example.com/s.css", "/web/2021/http://example.com/img/x.png"} {
		if body := get(t, s, target).Body.String(); strings.Contains(body, "replay.js") {
			t.Errorf("%s: replay script in %q", target, body)
		}
	}
	hostile := `http://example.com/"><script>alert(1)</script>`
	z := xhtml.NewTokenizer(bytes.NewReader(replayScriptTag(hostile, "2021", "")))
	if z.Next() != xhtml.StartTagToken {
		t.Fatal("replay script tag is not a start tag")
	}
	if tok := z.Token(); len(tok.Attr) != 3 || tok.Attr[1].Val != hostile || z.Next() != xhtml.EndTagToken || z.Next() != xhtml.ErrorToken {
		t.Errorf("replay script tag for %q: %v", hostile, tok)
	}

	w := get(t, s, replayJSPath)
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), replayJS) || len(replayJS) < 1000 {
		t.Fatalf("GET %s = %d, %d bytes", replayJSPath, w.Code, w.Body.Len())
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	etag := w.Header().Get("ETag")
	if w := get(t, s, replayJSPath, "If-None-Match", etag); etag == "" || w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match %s = %d, %d bytes", etag, w.Code, w.Body.Len())
	}
	if w := get(t, s, replayJSPath, "If-None-Match", `"other"`); w.Code != 200 {
		t.Errorf("If-None-Match other = %d", w.Code)
	}
}

// TestRootRelativeFromReplay checks that a request for a path that is not
// the gateway's own, made by a replayed page (its Referer), is redirected
// to that path on the page's archived site at the page's timestamp, and
// that other such requests stay 404s.
func TestRootRelativeFromReplay(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	for _, tc := range []struct{ target, referer, want string }{
		{"/img/x.png", "http://content.test/web/2021/http://example.com/dir/page.html", "/web/2021/http://example.com/img/x.png"},
		{"/a?b=1&c=%20", "http://content.test/web/2021mp_/https://Example.com:443/", "/web/2021/https://example.com/a?b=1&c=%20"},
		{"/f.html", "http://content.test/web/20210615000000if_/http://example.com/", "/web/20210615000000if_/http://example.com/f.html"},
		{"/img/x.png", "", ""},
		{"/img/x.png", "http://other.test/web/2021/http://example.com/", ""},                         // another origin
		{"/img/x.png", "http://gw.test/web/2021/http://example.com/", ""},                            // the UI's page
		{"/img/x.png", "http://content.test/web/*/http://example.com/", ""},                          // not a replay
		{"/img/x.png", "http://content.test/cdx?url=http://example.com/", ""},                        // not a /web/ page
		{"/img/x.png", "http://content.test/web/2021/ftp://example.com/", ""},                        // not http(s)
		{"/static/replay.js", "http://content.test/web/2021/http://example.com/", "(gateway's own)"}, // the gateway's paths win
	} {
		var hdr []string
		if tc.referer != "" {
			hdr = []string{"Referer", tc.referer}
		}
		w := getContent(t, s, tc.target, hdr...)
		switch {
		case tc.want == "(gateway's own)":
			if w.Code != http.StatusOK {
				t.Errorf("%s from %s: %d %s", tc.target, tc.referer, w.Code, w.Header().Get("Location"))
			}
		case tc.want == "":
			// Not the archive's: the UI origin's path, if anything.
			if w.Code != http.StatusFound || w.Header().Get("Location") != uiOrigin+tc.target {
				t.Errorf("%s from %q: %d %s, want 302 to the UI", tc.target, tc.referer, w.Code, w.Header().Get("Location"))
			}
		case w.Code != http.StatusTemporaryRedirect || w.Header().Get("Location") != tc.want || w.Header().Get("Vary") != "Referer":
			t.Errorf("%s from %s: %d %q %v, want 307 to %s", tc.target, tc.referer, w.Code, w.Header().Get("Location"), w.Header(), tc.want)
		}
	}
}

func TestRedirectCapture(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := get(t, s, "/web/20210101000000/http://example.com/old")
	if w.Code != http.StatusMovedPermanently {
		t.Fatalf("status %d", w.Code)
	}
	if got, want := w.Header().Get("Location"), "/web/20210101000000/http://example.com/new#top"; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	w = get(t, s, "/web/20210101000000id_/http://example.com/old")
	if got, want := w.Header().Get("Location"), "/web/20210101000000id_/http://example.com/new#top"; got != want {
		t.Errorf("id_ Location = %q, want %q", got, want)
	}
}

func TestGzipCapture(t *testing.T) {
	f := newFake()
	f.add(t, page, "20200101000000", 200, "text/html", string(gzipBytes(t, `<a href="/z">z</a>`)), "Content-Encoding", "gzip")
	s := newServer(t, f)
	w := get(t, s, "/web/2020/"+page)
	if !strings.Contains(w.Body.String(), `href="/web/2020/http://example.com/z"`) || w.Header().Get("Content-Encoding") != "" {
		t.Errorf("gzip page not decoded and rewritten: %q %v", w.Body, w.Header())
	}
	w = get(t, s, "/web/2020id_/"+page)
	if w.Header().Get("Content-Encoding") != "gzip" || !isGzip(w.Body.Bytes()) {
		t.Errorf("id_ of gzip page: %v", w.Header())
	}
	// A gzip file (not a content coding) is served as it is.
	gz := string(gzipBytes(t, "file"))
	f.add(t, "http://example.com/f.gz", "20200101000000", 200, "application/gzip", gz)
	w = get(t, s, "/web/2020/http://example.com/f.gz")
	if w.Body.String() != gz || w.Header().Get("Content-Encoding") != "" {
		t.Errorf("gzip file changed: %q %v", w.Body, w.Header())
	}
}

func TestMementoHeaders(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	// The content origin's replay and the UI's framed page alike: both
	// point to the UI origin's TimeGate and TimeMap.
	for _, w := range []*httptest.ResponseRecorder{get(t, s, "/web/2021/"+page), getUI(t, s, "/web/2021/"+page)} {
		link := w.Header().Get("Link")
		for _, want := range []string{
			`<http://example.com/>; rel="original"`,
			`<http://gw.test/timegate/http://example.com/>; rel="timegate"`,
			`<http://gw.test/timemap/link/http://example.com/>; rel="timemap"; type="application/link-format"`,
		} {
			if !strings.Contains(link, want) {
				t.Errorf("Link %q lacks %q", link, want)
			}
		}
		if got := w.Header().Get("Memento-Datetime"); got != "Tue, 15 Jun 2021 00:00:00 GMT" {
			t.Errorf("Memento-Datetime = %q", got)
		}
	}
}

func TestTimemap(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := get(t, s, "/timemap/link/"+page)
	if w.Code != 200 || w.Header().Get("Content-Type") != LinkFormat {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	want := `<http://example.com/>; rel="original",
<http://gw.test/timemap/link/http://example.com/>; rel="self"; type="application/link-format"; from="Wed, 01 Jan 2020 12:00:00 GMT"; until="Tue, 01 Mar 2022 08:00:00 GMT",
<http://gw.test/timegate/http://example.com/>; rel="timegate",
<http://gw.test/web/20200101120000/http://example.com/>; rel="first memento"; datetime="Wed, 01 Jan 2020 12:00:00 GMT",
<http://gw.test/web/20210615000000/http://example.com/>; rel="memento"; datetime="Tue, 15 Jun 2021 00:00:00 GMT",
<http://gw.test/web/20220301080000/http://example.com/>; rel="last memento"; datetime="Tue, 01 Mar 2022 08:00:00 GMT"
`
	if got := w.Body.String(); got != want {
		t.Errorf("timemap:\n%s\nwant:\n%s", got, want)
	}
	if w := get(t, s, "/timemap/link/http://example.com/none"); w.Code != 404 {
		t.Errorf("timemap of unknown URL: %d", w.Code)
	}
}

func TestTimegate(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	for _, tc := range []struct {
		accept string
		code   int
		loc    string
	}{
		{"", 302, "/web/20220301080000/http://example.com/"},
		{"Tue, 15 Jun 2021 10:00:00 GMT", 302, "/web/20210615000000/http://example.com/"},
		{"Mon, 01 Jan 1990 00:00:00 GMT", 302, "/web/20200101120000/http://example.com/"},
		{"yesterday", 400, ""},
	} {
		w := get(t, s, "/timegate/"+page, "Accept-Datetime", tc.accept)
		if w.Code != tc.code || w.Header().Get("Location") != tc.loc {
			t.Errorf("Accept-Datetime %q: %d %q, want %d %q", tc.accept, w.Code, w.Header().Get("Location"), tc.code, tc.loc)
		}
		if w.Header().Get("Vary") != "accept-datetime" {
			t.Errorf("Accept-Datetime %q: Vary = %q", tc.accept, w.Header().Get("Vary"))
		}
	}
}

func TestDatesAndLatest(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := get(t, s, "/web/*/example.com")
	body := w.Body.String()
	for _, want := range []string{"3 captures", `href="/web/20210615000000/http://example.com/"`, "2022", "March"} {
		if !strings.Contains(body, want) {
			t.Errorf("dates page lacks %q", want)
		}
	}
	w = get(t, s, "/web/http:/example.com/")
	if w.Code != 302 || w.Header().Get("Location") != "/web/20220301080000/http://example.com/" {
		t.Errorf("latest: %d %q", w.Code, w.Header().Get("Location"))
	}
}

func TestHomeForm(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	if w := get(t, s, "/"); w.Code != 200 || !strings.Contains(w.Body.String(), `<form class="go"`) {
		t.Fatalf("home: %d", w.Code)
	}
	for _, tc := range []struct{ q, loc string }{
		{"/?url=example.com", "/web/*/http://example.com/"},
		{"/?url=example.com&date=2021-06-15", "/web/20210615/http://example.com/"},
	} {
		if w := get(t, s, tc.q); w.Code != 302 || w.Header().Get("Location") != tc.loc {
			t.Errorf("%s: %d %q, want %q", tc.q, w.Code, w.Header().Get("Location"), tc.loc)
		}
	}
	if w := get(t, s, "/?url=ftp://example.com/"); w.Code != 400 {
		t.Errorf("ftp url: %d", w.Code)
	}
}

func TestNotFoundAndErrors(t *testing.T) {
	f := sampleArchive(t)
	s := newServer(t, f)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/web/2021/http://nowhere.example/", 404, "no capture of http://nowhere.example/"},
		{"/web/*/http://nowhere.example/", 404, "no capture"},
		{"/web/2021/ftp://example.com/", 400, "not http or https"},
		{"/web/2021/javascript:alert(1)", 400, "not http or https"},
		{"/web/2021/", 400, "no URL"},
		{"/web/20211301xx/http://example.com/", 400, "bad timestamp"},
		{"/web/123456789012345678/http://example.com/", 400, "bad timestamp"},
		{"/web/2021/http://" + strings.Repeat("a", 10000) + ".com/", 400, "malformed archive path"},
		{"/nothing-here", 404, "no page"},
		{"/ring", 404, ""},
		{"/api/status", 404, ""},
		{"/metrics", 404, ""},
		{"/export?host=example.com", 404, ""},
		{"/web/2021/http://example.com/<script>alert(1)</script>", 404, "%3Cscript%3E"},
	} {
		w := get(t, s, tc.path)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%.80s: %d, want %d with %q\n%.300s", tc.path, w.Code, tc.code, tc.want, w.Body)
		}
		if strings.Contains(w.Body.String(), "<script>alert") {
			t.Errorf("%.80s: unescaped input in page", tc.path)
		}
	}
	f.err = errors.New("owner unreachable")
	if w := get(t, s, "/web/2021/"+page); w.Code != http.StatusBadGateway {
		t.Errorf("archive error: %d", w.Code)
	}
	f.err = fmt.Errorf("slow: %w", context.DeadlineExceeded)
	if w := get(t, s, "/web/2021/"+page); w.Code != http.StatusGatewayTimeout {
		t.Errorf("archive timeout: %d", w.Code)
	}
	req := httptest.NewRequest(http.MethodPost, "http://gw.test/", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}

// blockingArchive waits for the context, to check that timeouts reach it.
type blockingArchive struct{}

func (blockingArchive) Versions(ctx context.Context, _ string) ([]archive.Version, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (blockingArchive) Get(ctx context.Context, _ string, _ time.Time) (archive.Version, *archive.Capture, error) {
	<-ctx.Done()
	return archive.Version{}, nil, ctx.Err()
}

func TestTimeoutReachesArchive(t *testing.T) {
	s := newServer(t, blockingArchive{}, func(c *Config) { c.Timeout = time.Millisecond })
	if w := get(t, s, "/web/2021/"+page); w.Code != http.StatusGatewayTimeout {
		t.Errorf("status %d, want 504", w.Code)
	}
}

func TestStatusAndMetrics(t *testing.T) {
	s := newServer(t, newFake(), func(c *Config) {
		c.PublicStatus = true
		c.Status = func(context.Context) any { return map[string]int{"vnodes": 4} }
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "herod_up 1\n") })
	})
	if w := get(t, s, "/api/status"); w.Header().Get("Content-Type") != "application/json" || !strings.Contains(w.Body.String(), `"vnodes": 4`) {
		t.Errorf("status: %v %s", w.Header(), w.Body)
	}
	if w := get(t, s, "/metrics"); w.Body.String() != "herod_up 1\n" {
		t.Errorf("metrics: %q", w.Body)
	}
}

func TestNewRequiresArchive(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrNoArchive) {
		t.Errorf("New without archive: %v", err)
	}
}

func TestHeadAndSniffing(t *testing.T) {
	f := sampleArchive(t)
	f.add(t, "http://example.com/untyped", "20200101000000", 200, "", `<html><body><a href="/q">q</a></body></html>`)
	s := newServer(t, f)
	r := httptest.NewRequest(http.MethodHead, contentOrigin+"/web/2021/"+page, nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") == "0" || w.Header().Get("Memento-Datetime") == "" {
		t.Errorf("HEAD: %d, %d body bytes, %v", w.Code, w.Body.Len(), w.Header())
	}
	w = get(t, s, "/web/2020/http://example.com/untyped")
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), `/web/2020/http://example.com/q`) {
		t.Errorf("untyped HTML not sniffed and rewritten: %v %q", w.Header(), w.Body)
	}
}

// TestOverRealHTTP replays through a real server and client: the embedded
// "//" must survive the trip, and a collapsed "http:/" must work too.
func TestOverRealHTTP(t *testing.T) {
	_, content, _ := serveOrigins(t, sampleArchive(t))
	for _, p := range []string{"/web/2021/http://example.com/", "/web/2021/http:/example.com/", "/web/2021/example.com"} {
		resp, err := http.Get(content + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "second") {
			t.Errorf("%s: %d %.200q", p, resp.StatusCode, b)
		}
	}
}

func TestStats(t *testing.T) {
	f := sampleArchive(t)
	s := newServer(t, f)
	get(t, s, "/web/2021/"+page)                   // replay, rewritten
	get(t, s, "/web/2021id_/"+page)                // replay, raw
	get(t, s, "/web/2021/http://nowhere.example/") // 404
	get(t, s, "/web/2021/ftp://example.com/")      // 400
	get(t, s, "/cdx?url=example.com&filter=bad")   // 400
	getUI(t, s, "/web/2021/"+page)                 // the framed page
	f.err = fmt.Errorf("slow: %w", context.DeadlineExceeded)
	get(t, s, "/web/2021/"+page) // timeout
	// Clients: the /cdx request's client, whose export bucket is kept.
	want := Stats{Requests: 7, Replays: 2, Frames: 1, Rewritten: 1, NotFound: 1, BadRequests: 2, ArchiveErrors: 1, Timeouts: 1, Clients: 1}
	if got := s.Stats(); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}
