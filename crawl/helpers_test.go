package crawl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
)

// memArchive is an in-memory Archive: versions per URL, crawl states.
type memArchive struct {
	mu       sync.Mutex
	versions map[string][]archive.Capture
	states   map[string]archive.CrawlState
	puts     int
	failPut  error
}

func newMemArchive() *memArchive {
	return &memArchive{versions: map[string][]archive.Capture{}, states: map[string]archive.CrawlState{}}
}

func (m *memArchive) Put(_ context.Context, c archive.Capture) (archive.Version, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.failPut != nil {
		return archive.Version{}, false, m.failPut
	}
	d := id.Sum(c.Body)
	if c.State != nil {
		st := *c.State
		st.Outlinks = slices.Clone(st.Outlinks)
		m.states[c.URL] = st
	}
	v := archive.Version{URL: c.URL, Key: id.OfString(c.URL), Digest: d, Time: c.Time, Status: c.Status, Length: int64(len(c.Body))}
	if vs := m.versions[c.URL]; len(vs) > 0 && id.Sum(vs[len(vs)-1].Body) == d && vs[len(vs)-1].Status == c.Status {
		return v, false, nil
	}
	m.versions[c.URL] = append(m.versions[c.URL], c)
	return v, true, nil
}

func (m *memArchive) State(_ context.Context, u string) (archive.CrawlState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[u]
	if !ok {
		return archive.CrawlState{}, archive.ErrNotFound
	}
	st.Outlinks = slices.Clone(st.Outlinks)
	return st, nil
}

func (m *memArchive) SetState(_ context.Context, u string, st archive.CrawlState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st.Outlinks = slices.Clone(st.Outlinks)
	m.states[u] = st
	return nil
}

func (m *memArchive) count(u string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.versions[u])
}

func (m *memArchive) urls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for u := range m.versions {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// loopForwarder records forwarded links and, when c is set, adds them back
// to the crawler: a one-node ring.
type loopForwarder struct {
	mu   sync.Mutex
	c    *Crawler
	got  [][]string
	fail error
}

func (f *loopForwarder) Forward(ctx context.Context, urls []string) error {
	f.mu.Lock()
	if f.fail != nil {
		err := f.fail
		f.mu.Unlock()
		return err
	}
	f.got = append(f.got, slices.Clone(urls))
	c := f.c
	f.mu.Unlock()
	if c != nil {
		return c.Add(ctx, urls)
	}
	return nil
}

func (f *loopForwarder) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, g := range f.got {
		out = append(out, g...)
	}
	slices.Sort(out)
	return out
}

func (f *loopForwarder) reset() {
	f.mu.Lock()
	f.got = nil
	f.mu.Unlock()
}

// site is a small test web server: pages by path, with ETag and
// Last-Modified, honouring conditional requests, recording requests.
type site struct {
	mu        sync.Mutex
	pages     map[string]page
	robots    *page // nil: 404
	log       []request
	noCond    bool // ignore conditional headers (always 200)
	block     chan struct{}
	srv       *httptest.Server
	modTime   time.Time
	redirects map[string]string
}

type page struct {
	status int
	ctype  string
	body   string
}

type request struct {
	path, ifNoneMatch, ifModSince, ua, from string
	at                                      time.Time
}

func newSite(t testing.TB, pages map[string]string) *site {
	s := &site{pages: map[string]page{}, modTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), redirects: map[string]string{}}
	for p, b := range pages {
		s.pages[p] = page{status: 200, ctype: "text/html; charset=utf-8", body: b}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) url(p string) string { return s.srv.URL + p }

func (s *site) set(p, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[p] = page{status: 200, ctype: "text/html; charset=utf-8", body: body}
}

func (s *site) setPage(p string, pg page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[p] = pg
}

func (s *site) requests(p string) []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []request
	for _, r := range s.log {
		if p == "" || r.path == p {
			out = append(out, r)
		}
	}
	return out
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.log = append(s.log, request{path: r.URL.RequestURI(), ifNoneMatch: r.Header.Get("If-None-Match"),
		ifModSince: r.Header.Get("If-Modified-Since"), ua: r.Header.Get("User-Agent"), from: r.Header.Get("From"), at: time.Now()})
	block := s.block
	pg, ok := s.pages[r.URL.Path]
	robots := s.robots
	target, isRedirect := s.redirects[r.URL.Path]
	noCond := s.noCond
	s.mu.Unlock()
	if block != nil && r.URL.Path != "/robots.txt" {
		select {
		case <-block:
		case <-r.Context().Done():
			return
		}
	}
	if r.URL.Path == "/robots.txt" {
		if robots == nil {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(robots.status)
		fmt.Fprint(w, robots.body)
		return
	}
	if isRedirect {
		http.Redirect(w, r, target, http.StatusMovedPermanently)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	etag := fmt.Sprintf(`"%s"`, id.OfString(pg.body).Short())
	if !noCond && pg.status == http.StatusOK { // an error answer has no validators
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", s.modTime.Format(http.TimeFormat))
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if pg.ctype != "" {
		w.Header().Set("Content-Type", pg.ctype)
	}
	w.WriteHeader(pg.status)
	fmt.Fprint(w, pg.body)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testConfig is a fast config for loopback tests.
func testConfig(clock *fakeClock) Config {
	return Config{HostRate: 10000, HostConns: 4, Clock: clock.Now, Timeout: 5 * time.Second, AllowPrivate: loopback}
}

// loopback is the allow-list of tests whose servers listen on 127.0.0.x
// and ::1: the crawler refuses those addresses by default.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// waitIdle polls until c is idle: real sockets are involved, so this is a
// deadline, not a sleep that decides anything.
func waitIdle(t testing.TB, c *Crawler) {
	t.Helper()
	testwait.For(t, "the crawler to be idle", 20*time.Second, func() error {
		if !c.Idle() {
			return fmt.Errorf("busy: %+v", c.Stats())
		}
		return nil
	})
}

// startCrawler opens a crawler on dir with a loopback forwarder and starts it.
func startCrawler(t testing.TB, dir string, cfg Config, a Archive) (*Crawler, *loopForwarder) {
	t.Helper()
	f := &loopForwarder{}
	c, err := New(dir, cfg, depsOf(a, f))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return c, f
}

func links(s *site, paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, `<a href="%s">x</a>`, p)
	}
	return "<html><body>" + b.String() + "</body></html>"
}

// syncBuffer is a bytes.Buffer that a logger may write to from several
// goroutines while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fullURLs returns, sorted, the URLs whose newest version holds the body
// (not a record of an answer whose body was not kept: Truncated).
func (m *memArchive) fullURLs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for u, vs := range m.versions {
		if len(vs) > 0 && vs[len(vs)-1].Truncated == "" {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// truncated returns the WARC-Truncated reason of u's newest version, ""
// if it has none or holds the body.
func (m *memArchive) truncated(u string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if vs := m.versions[u]; len(vs) > 0 {
		return vs[len(vs)-1].Truncated
	}
	return ""
}

// depsOf returns Deps with a and f and every optional party that a or f
// implements, as the tests' archives and forwarders each offer a
// different set.
func depsOf(a Archive, f Forwarder) Deps {
	d := Deps{Archive: a, Forwarder: f}
	d.Touch, _ = a.(Toucher)
	d.Versions, _ = a.(VersionStater)
	d.Lister, _ = a.(URLLister)
	d.Haver, _ = a.(VersionHaver)
	d.Sharer, _ = f.(KnownSharer)
	if d.Haver == nil || d.Sharer == nil {
		d.Haver, d.Sharer = nil, nil
	}
	d.Relocator, _ = f.(Relocator)
	d.Requisites, _ = f.(RequisiteForwarder)
	return d
}
