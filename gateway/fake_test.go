package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/memarchive"
)

// fakeArchive is the gateway tests' archive: memarchive.Mem, the
// reference in-memory archive (gatewaytest.Mem), behind Versions and Get
// that fail with err when it is set. It holds Mem in a named field so that
// it is not a Lister (listingArchive adds List).
type fakeArchive struct {
	mem *memarchive.Mem
	err error // returned by Versions and Get when set
}

func newFake() *fakeArchive { return &fakeArchive{mem: memarchive.New()} }

// add stores a capture of url at the time given as a 14-digit timestamp.
func (f *fakeArchive) add(t testing.TB, url, ts string, status int, ctype, body string, hdr ...string) {
	t.Helper()
	tm, err := time.Parse(TimestampLayout, ts)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Add(hdr[i], hdr[i+1])
	}
	f.put(t, &archive.Capture{URL: url, Time: tm, Status: status, Header: h, Body: []byte(body)})
}

// put stores a copy of c.
func (f *fakeArchive) put(t testing.TB, c *archive.Capture) {
	t.Helper()
	if err := f.mem.Add(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// setPeers sets the Peer of every capture to peer(url, i), i counting the
// captures of url from the oldest.
func (f *fakeArchive) setPeers(t testing.TB, peer func(url string, i int) string) {
	t.Helper()
	ctx := context.Background()
	vs, err := f.mem.List(ctx, cdx.Query{Match: cdx.MatchPrefix})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, v := range vs {
		_, c, err := f.mem.Get(ctx, v.URL, v.Time)
		if err != nil {
			t.Fatal(err)
		}
		c.Peer = peer(v.URL, n[v.URL])
		n[v.URL]++
		f.put(t, c)
	}
}

func (f *fakeArchive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.err != nil {
		return nil, f.err
	}
	return f.mem.Versions(ctx, url)
}

func (f *fakeArchive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	if err := ctx.Err(); err != nil {
		return archive.Version{}, nil, err
	}
	if f.err != nil {
		return archive.Version{}, nil, f.err
	}
	return f.mem.Get(ctx, url, t)
}

// listingArchive adds Mem's List and a fake Export to fakeArchive.
type listingArchive struct {
	*fakeArchive
	exportErrAfter int // fail after this many records when > 0
}

func (l *listingArchive) List(ctx context.Context, q cdx.Query) ([]archive.Version, error) {
	return l.mem.List(ctx, q)
}

// Export writes a fake record per version: "REC <cursor>\n".
func (l *listingArchive) Export(ctx context.Context, q cdx.Query, w io.Writer, after string) error {
	q.Limit = 0
	vs, err := l.List(ctx, q)
	if err != nil {
		return err
	}
	var au string
	var at time.Time
	if after != "" {
		if au, at, err = ParseCursor(after); err != nil {
			return err
		}
	}
	n := 0
	for _, v := range vs {
		if after != "" && (v.URL < au || v.URL == au && !v.Time.After(at)) {
			continue
		}
		if l.exportErrAfter > 0 && n == l.exportErrAfter {
			return fmt.Errorf("fake export: owner unreachable")
		}
		if _, err := fmt.Fprintf(w, "REC %s\n", archive.WaybackCursor(v.URL, v.Time)); err != nil {
			return err
		}
		n++
	}
	return nil
}

var (
	_ Archive  = (*fakeArchive)(nil)
	_ Lister   = (*listingArchive)(nil)
	_ Exporter = (*listingArchive)(nil)
)

// The origins of the gateways tests make with newServer.
const (
	uiOrigin      = "http://gw.test"
	contentOrigin = "http://content.test"
)

// newServer returns a gateway over a, with fixed clock, its UI at uiOrigin
// and its content at contentOrigin.
func newServer(t testing.TB, a Archive, mod ...func(*Config)) *Server {
	t.Helper()
	cfg := Config{
		Archive: a, Now: func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) },
		UIOrigin: uiOrigin, ContentOrigin: contentOrigin,
	}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// get performs a request on s and returns the recorded response. As a
// browser would, it asks replays (/web/<ts>[mod]/<url>) and the replay
// script of the content origin, everything else of the UI origin; getUI
// and getContent choose.
func get(t testing.TB, s http.Handler, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	origin := uiOrigin
	if p, q, _ := strings.Cut(target, "?"); strings.HasPrefix(p, replayJSPath) {
		origin = contentOrigin
	} else if rest, ok := strings.CutPrefix(p, "/web/"); ok {
		if tg, err := ParseWebPath(rest, q); err == nil && tg.Kind == KindReplay {
			origin = contentOrigin
		}
	}
	return getAt(t, s, origin, target, hdr...)
}

// getUI performs a request on s's UI origin.
func getUI(t testing.TB, s http.Handler, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	return getAt(t, s, uiOrigin, target, hdr...)
}

// getContent performs a request on s's content origin.
func getContent(t testing.TB, s http.Handler, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	return getAt(t, s, contentOrigin, target, hdr...)
}

func getAt(t testing.TB, s http.Handler, origin, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, origin+target, nil)
	if strings.Contains(target, "://") || strings.HasPrefix(target, "/") {
		// Set the raw request target so nothing cleans the embedded URL.
		r.RequestURI = target
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func gzipBytes(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// reqLog records the requests a test server answered.
type reqLog struct {
	mu   sync.Mutex
	reqs []loggedReq
}

type loggedReq struct {
	Origin string // "ui" or "content"
	URI    string // r.RequestURI
	Header http.Header
	Status int
}

func (l *reqLog) wrap(origin string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		l.reqs = append(l.reqs, loggedReq{Origin: origin, URI: r.RequestURI, Header: r.Header.Clone(), Status: rec.status})
		l.mu.Unlock()
	})
}

// uris returns the request URIs asked of origin, in order.
func (l *reqLog) uris(origin string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		if r.Origin == origin {
			out = append(out, r.URI)
		}
	}
	return out
}

// all returns a copy of the log.
func (l *reqLog) all() []loggedReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedReq(nil), l.reqs...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// serveOrigins serves a gateway over a on two loopback listeners, its UI
// and content origins (":port" specs), and returns their base URLs and
// the log of the requests they answered.
func serveOrigins(t testing.TB, a Archive, mod ...func(*Config)) (ui, content string, log *reqLog) {
	t.Helper()
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	port := func(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }
	s := newServer(t, a, append([]func(*Config){func(c *Config) {
		c.UIOrigin, c.ContentOrigin = ":"+port(lns[0]), ":"+port(lns[1])
	}}, mod...)...)
	log = &reqLog{}
	for i, h := range []http.Handler{log.wrap("ui", s.UI()), log.wrap("content", s.Content())} {
		srv := &httptest.Server{Listener: lns[i], Config: &http.Server{Handler: h}}
		srv.Start()
		t.Cleanup(srv.Close)
	}
	return "http://" + lns[0].Addr().String(), "http://" + lns[1].Addr().String(), log
}
