package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func TestCrawlSiteAndStats(t *testing.T) {
	s := newSite(t, map[string]string{
		"/":      links(nil, "/a", "/b", "/img.png", "/a#frag"),
		"/a":     links(nil, "/", "/b", "/c"),
		"/b":     links(nil, "/a"),
		"/c":     `<html><link rel=stylesheet href="/s.css"></html>`,
		"/s.css": "",
	})
	s.setPage("/img.png", page{status: 200, ctype: "image/png", body: "\x89PNG..."})
	s.setPage("/s.css", page{status: 200, ctype: "text/css", body: `body{background:url("/bg.gif")}`})
	s.setPage("/bg.gif", page{status: 200, ctype: "image/gif", body: "GIF89a"})
	a := newMemArchive()
	clock := newClock()
	cfg := testConfig(clock)
	cfg.From = "ops@example.org"
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	want := []string{s.url("/"), s.url("/a"), s.url("/b"), s.url("/bg.gif"), s.url("/c"), s.url("/img.png"), s.url("/s.css")}
	if got := a.urls(); !slices.Equal(got, want) {
		t.Fatalf("stored %v\nwant %v", got, want)
	}
	st := c.Stats()
	if st.NewVersions != 7 || st.FetchedToday != 7 || st.KnownURLs != 7 || st.Queued != 0 || st.InFlight != 0 ||
		st.ResponseSec <= 0 || st.ResponseSec > 7*5 {
		t.Fatalf("stats %+v", st)
	}
	for _, r := range s.requests("") {
		if r.ua != DefaultUserAgent || r.from != "ops@example.org" {
			t.Fatalf("request %s: UA %q From %q", r.path, r.ua, r.from)
		}
	}
	// Each page once: the seen set holds within the day.
	if n := len(s.requests("/a")); n != 1 {
		t.Fatalf("/a fetched %d times", n)
	}
}

// archiveKind builds an Archive for the shared tests and tells how many
// versions it holds for a URL.
type archiveKind struct {
	name     string
	open     func(t *testing.T) Archive
	versions func(t *testing.T, a Archive, url string) int
}

var archiveKinds = []archiveKind{
	{name: "mem",
		open:     func(*testing.T) Archive { return newMemArchive() },
		versions: func(_ *testing.T, a Archive, u string) int { return a.(*memArchive).count(u) }},
	storeKind, // archive_store_test.go: the real archive.Store
}

func TestNewDayConditionalGET(t *testing.T) {
	for _, k := range archiveKinds {
		t.Run(k.name, func(t *testing.T) { testNewDayConditionalGET(t, k) })
	}
}

func testNewDayConditionalGET(t *testing.T, k archiveKind) {
	s := newSite(t, map[string]string{
		"/":  links(nil, "/a", "/b"),
		"/a": "<p>a</p>",
		"/b": "<p>b</p>",
	})
	a := k.open(t)
	clock := newClock()
	c, f := startCrawler(t, t.TempDir(), testConfig(clock), a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	day1 := c.Stats().Day

	// Day 2: /a changes, / gains a link to /c, /b stays.
	s.set("/a", "<p>a2</p>")
	s.set("/", links(nil, "/a", "/b", "/c"))
	s.set("/c", "<p>c</p>")
	f.reset()
	clock.Add(24 * time.Hour)
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	st := c.Stats()
	if st.Day != day1+1 {
		t.Fatalf("day %d, want %d", st.Day, day1+1)
	}
	if st.NewVersions != 3 || st.NotModified != 1 || st.FetchedToday != 4 {
		t.Fatalf("day 2 stats %+v", st)
	}
	if got := f.all(); !slices.Equal(got, []string{s.url("/c")}) {
		t.Fatalf("forwarded %v, want only the new link /c", got)
	}
	for _, p := range []string{"/", "/a", "/b"} {
		rs := s.requests(p)
		if len(rs) != 2 {
			t.Fatalf("%s fetched %d times", p, len(rs))
		}
		if rs[1].ifNoneMatch == "" || rs[1].ifModSince == "" {
			t.Fatalf("%s day 2 request not conditional: %+v", p, rs[1])
		}
	}
	if k.versions(t, a, s.url("/b")) != 1 || k.versions(t, a, s.url("/a")) != 2 {
		t.Fatal("wrong version counts")
	}
}

func TestUnchangedDigestDiscarded(t *testing.T) {
	s := newSite(t, map[string]string{"/": links(nil, "/x"), "/x": "x"})
	s.noCond = true // server ignores validators: always 200
	a := newMemArchive()
	clock := newClock()
	c, f := startCrawler(t, t.TempDir(), testConfig(clock), a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	f.reset()
	puts := a.puts
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	st := c.Stats()
	if st.Unchanged != 2 || st.NewVersions != 0 || st.NotModified != 0 {
		t.Fatalf("stats %+v", st)
	}
	if a.puts != puts {
		t.Fatalf("unchanged payloads reached Put (%d calls)", a.puts-puts)
	}
	if got := f.all(); len(got) != 0 {
		t.Fatalf("unchanged page forwarded %v", got)
	}
}

func TestOwnsFiltersNewDay(t *testing.T) {
	s := newSite(t, map[string]string{"/": links(nil, "/mine", "/theirs"), "/mine": "m", "/theirs": "t"})
	a := newMemArchive()
	clock := newClock()
	cfg := testConfig(clock)
	cfg.Owns = func(u string) bool { return !strings.HasSuffix(u, "/theirs") }
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if n := len(s.requests("/theirs")); n != 1 {
		t.Fatalf("/theirs fetched %d times, want 1 (not owned at the new day)", n)
	}
	if n := len(s.requests("/mine")); n != 2 {
		t.Fatalf("/mine fetched %d times, want 2", n)
	}
}

func TestRestartKeepsQueue(t *testing.T) {
	paths := map[string]string{}
	var seeds []string
	for _, p := range []string{"/1", "/2", "/3", "/4", "/5", "/6"} {
		paths[p] = "page " + p
	}
	s := newSite(t, paths)
	for p := range paths {
		seeds = append(seeds, s.url(p))
	}
	s.block = make(chan struct{}) // every page request hangs until released
	a := newMemArchive()
	clock := newClock()
	dir := t.TempDir()
	cfg := testConfig(clock)
	cfg.HostConns = 2
	c, _ := startCrawler(t, dir, cfg, a)
	if err := c.Add(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "fetches to start", 10*time.Second, func() error { // robots.txt and a request on each connection
		if len(s.requests("")) < 3 {
			return fmt.Errorf("fetches did not start: %+v", c.Stats())
		}
		return nil
	})
	if err := c.Close(); err != nil { // a crash mid-crawl, as far as the queue can tell
		t.Fatal(err)
	}
	if len(a.urls()) != 0 {
		t.Fatal("nothing should be stored yet")
	}
	close(s.block)
	c2, _ := startCrawler(t, dir, cfg, a)
	if st := c2.Stats(); st.Queued+st.InFlight+st.FetchedToday == 0 && len(a.urls()) == 0 {
		t.Fatalf("queue lost across restart: %+v", st)
	}
	waitIdle(t, c2)
	if got := len(a.urls()); got != 6 {
		t.Fatalf("stored %d pages after restart, want 6", got)
	}
	// The seen set survived too: adding the seeds again queues nothing.
	if err := c2.Add(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	if !c2.Idle() {
		t.Fatal("seen URLs queued again within the day")
	}
}

func TestRedirectStoredAndForwarded(t *testing.T) {
	s := newSite(t, map[string]string{"/new": "<p>new</p>"})
	s.redirects["/old"] = "/new"
	a := newMemArchive()
	c, f := startCrawler(t, t.TempDir(), testConfig(newClock()), a)
	if err := c.Add(context.Background(), []string{s.url("/old")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if a.count(s.url("/old")) != 1 || a.count(s.url("/new")) != 1 {
		t.Fatalf("stored %v", a.urls())
	}
	if got := f.all(); !slices.Equal(got, []string{s.url("/new")}) {
		t.Fatalf("forwarded %v", got)
	}
	if v := a.versions[s.url("/old")][0]; v.Status != 301 {
		t.Fatalf("redirect stored with status %d", v.Status)
	}
}

func TestForwardFailureRetried(t *testing.T) {
	s := newSite(t, map[string]string{"/": links(nil, "/a")})
	a := newMemArchive()
	clock := newClock()
	f := &loopForwarder{fail: errors.New("ring down")}
	c, err := New(t.TempDir(), testConfig(clock), depsOf(a, f))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if c.Stats().ErrorsByKind[KindForward] != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if got := f.all(); !slices.Equal(got, []string{s.url("/a")}) {
		t.Fatalf("after recovery forwarded %v, want the link kept from the failed day", got)
	}
}

func TestRefusedResponses(t *testing.T) {
	s := newSite(t, map[string]string{"/": links(nil, "/pdf", "/big", "/chunked", "/gone", "/err")})
	s.setPage("/pdf", page{status: 200, ctype: "application/pdf", body: "%PDF"})
	s.setPage("/big", page{status: 200, ctype: "text/html", body: strings.Repeat("x", 2000)})      // Content-Length
	s.setPage("/chunked", page{status: 200, ctype: "text/html", body: strings.Repeat("y", 10000)}) // chunked: cut by the limit
	s.setPage("/err", page{status: 503, ctype: "text/html", body: "busy"})
	a := newMemArchive()
	cfg := testConfig(newClock())
	cfg.MaxBody = 1000
	cfg.DenyTypes = []string{"application/pdf"}
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	// Error answers are stored (the archive's record of the URL that day);
	// refused types and bodies over the limit are recorded without their
	// bodies (WARC-Truncated).
	if got := a.fullURLs(); !slices.Equal(got, []string{s.url("/"), s.url("/err"), s.url("/gone")}) {
		t.Fatalf("stored in full %v", got)
	}
	for p, want := range map[string]string{"/pdf": "unspecified", "/big": "length", "/chunked": "length"} {
		if got := a.truncated(s.url(p)); got != want {
			t.Errorf("%s recorded with WARC-Truncated %q, want %q", p, got, want)
		}
	}
	errs := c.Stats().ErrorsByKind
	want := map[string]int64{KindContentType: 1, KindTooLarge: 2, KindStatus4xx: 1, KindStatus5xx: 1}
	for k, n := range want {
		if errs[k] != n {
			t.Fatalf("%s = %d, errors %v", k, errs[k], errs)
		}
	}
}

func TestAddScope(t *testing.T) {
	a := newMemArchive()
	cfg := testConfig(newClock())
	cfg.DenyHosts = []string{"bad.example"}
	f := &loopForwarder{}
	c, err := New(t.TempDir(), cfg, depsOf(a, f))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Add(context.Background(), []string{
		"http://ok.example/", "http://ok.example/#x", "mailto:x@y", "http://ok.example/q?x=1",
		"http://ok.example/a/a/a/a", "http://www.bad.example/", "http://ok.example/" + strings.Repeat("x", 2000),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Queued != 1 || st.KnownURLs != 1 {
		t.Fatalf("stats %+v", st)
	}
	want := map[string]int64{KindBadURL: 1, KindDynamic: 1, KindTrap: 1, KindHostDenied: 1, KindTooLong: 1}
	for k, n := range want {
		if st.ErrorsByKind[k] != n {
			t.Fatalf("%s = %d, errors %v", k, st.ErrorsByKind[k], st.ErrorsByKind)
		}
	}
}

func TestNewDayMidCrawl(t *testing.T) {
	pages := map[string]string{}
	var seeds []string
	for i := range 40 {
		pages["/p"+strconv.Itoa(i)] = "page " + strconv.Itoa(i)
	}
	s := newSite(t, pages)
	for p := range pages {
		seeds = append(seeds, s.url(p))
	}
	a := newMemArchive()
	cfg := testConfig(newClock())
	cfg.HostRate = 400
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	ctx := context.Background()
	if err := c.Add(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the crawl to progress", 10*time.Second, func() error {
		if c.Stats().FetchedToday < 10 {
			return fmt.Errorf("crawl did not progress: %+v", c.Stats())
		}
		return nil
	})
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	st := c.Stats()
	if st.Queued != 0 || st.InFlight != 0 || st.FetchedToday < 40 {
		t.Fatalf("stats after the day change %+v", st)
	}
	if got := len(a.urls()); got != 40 {
		t.Fatalf("stored %d pages, want 40", got)
	}
	for p := range pages {
		if n := len(s.requests(p)); n < 1 || n > 3 {
			t.Fatalf("%s requested %d times", p, n)
		}
	}
}

func TestTimeoutCounted(t *testing.T) {
	s := newSite(t, map[string]string{"/slow": "never"})
	s.block = make(chan struct{}) // never released: the handler returns when the client gives up
	cfg := testConfig(newClock())
	cfg.Timeout = 50 * time.Millisecond
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	if err := c.Add(context.Background(), []string{s.url("/slow")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if st := c.Stats(); st.ErrorsByKind[KindTimeout] != 1 || st.FetchedToday != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReadBody checks the body reader: a Content-Length within the limit is
// read into one buffer, a body shorter than it is an error, and a reader
// that goes past it (net/http does not) is read on up to the limit.
func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		cl, max    int64
		want       string
		short      bool
	}{
		{name: "exact", body: "hello", cl: 5, max: 10, want: "hello"},
		{name: "empty", body: "", cl: 0, max: 10, want: ""},
		{name: "short", body: "hel", cl: 5, max: 10, want: "hel", short: true},
		{name: "nothing", body: "", cl: 5, max: 10, want: "", short: true},
		{name: "past Content-Length", body: "hello world", cl: 5, max: 100, want: "hello world"},
		{name: "past the limit", body: "hello world", cl: 5, max: 8, want: "hello wor"},
		{name: "unknown length", body: "abc", cl: -1, max: 10, want: "abc"},
		{name: "unknown, over", body: "abcdefghijklm", cl: -1, max: 10, want: "abcdefghijk"},
		{name: "announced over presize", body: "abc", cl: presize + 1, max: 2 * presize, want: "abc"}, // not allocated up front
	} {
		got, err := readLimited(strings.NewReader(tc.body), tc.cl, tc.max)
		if string(got) != tc.want || (err != nil) != tc.short || (tc.short && !errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Errorf("%s: %q, %v; want %q, short %v", tc.name, got, err, tc.want, tc.short)
		}
	}
}

// TestBodyShorterThanContentLength serves a page that announces more
// bytes than it sends: the crawler stores nothing and counts a fetch error.
func TestBodyShorterThanContentLength(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "<a href=/x>cut short")
	}))
	defer srv.Close()
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), testConfig(newClock()), a)
	if err := c.Add(context.Background(), []string{srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if got := a.urls(); len(got) != 0 {
		t.Fatalf("stored %v", got)
	}
	if n := c.Stats().ErrorsByKind[KindFetch]; n != 1 {
		t.Fatalf("fetch errors %d, errors %v", n, c.Stats().ErrorsByKind)
	}
}

// Links a page yields pass the scope before they travel: dynamic URLs,
// traps, denied hosts and over-long URLs are not forwarded.
func TestExtractedLinksScoped(t *testing.T) {
	var s *site
	s = newSite(t, map[string]string{})
	s.set("/", `<a href="/ok">ok</a> <a href="/q?x=1">dyn</a> <a href="/cgi-bin/x">cgi</a>
		<a href="/t/t/t/t/t">trap</a> <a href="http://denied.example/p">denied</a>
		<a href="/`+strings.Repeat("l", 200)+`">long</a> <a href="/ok#frag">again</a>`)
	s.set("/ok", "fine")
	cfg := testConfig(newClock())
	cfg.DenyHosts = []string{"denied.example"}
	cfg.MaxURLLen = 150
	a := newMemArchive()
	c, f := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if got, want := f.all(), []string{s.url("/ok")}; !slices.Equal(got, want) {
		t.Fatalf("forwarded %v, want %v", got, want)
	}
	if got := a.urls(); len(got) != 2 {
		t.Fatalf("stored %v", got)
	}
}

// gateBudget holds every Wait for host until open is closed, and tells
// when the first one is waiting.
type gateBudget struct {
	host    string
	waiting chan struct{} // closed when a Wait for host first blocks
	open    chan struct{}
	once    sync.Once
}

func (b *gateBudget) Wait(ctx context.Context, host string, _ time.Duration) error {
	if host != b.host {
		return nil
	}
	b.once.Do(func() { close(b.waiting) })
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestOldDayEntrySuperseded: an entry that waited for its host's budget
// while a new day began is not fetched for the old day; the new day's
// entry fetches the URL, once.
func TestOldDayEntrySuperseded(t *testing.T) {
	s := newSite(t, map[string]string{"/slow": "s"})
	clock := newClock()
	cfg := testConfig(clock)
	b := &gateBudget{host: hostOf(s.url("/slow")), waiting: make(chan struct{}), open: make(chan struct{})}
	cfg.Budget = b
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/slow")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the entry never reached its host's budget")
	}
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	close(b.open)
	waitIdle(t, c)
	if n := len(s.requests("/slow")); n != 1 {
		t.Errorf("/slow requested %d times, want 1 (the new day's fetch alone)", n)
	}
}

// gateTransport holds the first request for path on its way to the
// server until open is closed, and tells when it is held.
type gateTransport struct {
	path string
	held chan struct{} // closed when the request is held
	open chan struct{}
	once sync.Once
}

func (g *gateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	first := false
	if req.URL.Path == g.path {
		g.once.Do(func() { first = true })
	}
	if first {
		close(g.held)
		select {
		case <-g.open:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// switchHolding reports whether a new day holds requests back
// (holdSends).
func switchHolding(c *Crawler) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendGate != nil
}

// heldAcrossNewDay starts a crawler whose transport holds the request for
// /slow, waits until it is held, and starts NewDay; it returns the
// crawler, the site, the gate and NewDay's result.
func heldAcrossNewDay(t *testing.T, wait time.Duration) (*Crawler, *site, *gateTransport, chan error) {
	t.Helper()
	s := newSite(t, map[string]string{"/slow": "s"})
	cfg := testConfig(newClock())
	cfg.Clock = time.Now // DayStarted on the site's clock
	cfg.DaySwitchWait = wait
	g := &gateTransport{path: "/slow", held: make(chan struct{}), open: make(chan struct{})}
	cfg.Client = &http.Client{Transport: g}
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	if err := c.Add(context.Background(), []string{s.url("/slow")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never went out")
	}
	done := make(chan error, 1)
	go func() { done <- c.NewDay(context.Background()) }()
	return c, s, g, done
}

// splitAt counts the site's requests of /slow before and after began.
func splitAt(s *site, began time.Time) (before, after int) {
	for _, r := range s.requests("/slow") {
		if r.at.Before(began) {
			before++
		} else {
			after++
		}
	}
	return before, after
}

// TestOldDayRequestAnsweredFirst: a request of the old day that passed
// its day's check and is on its way to the server when a new day begins
// is answered before the new day starts (Stats.DayStarted), and the new
// day's requests go out after it: the site's log splits at DayStarted,
// one request of the URL on each side. Without the wait the old day's
// request reached the site after the new day had begun, counting as the
// new day's second (TestHistoryNeverStops under load).
func TestOldDayRequestAnsweredFirst(t *testing.T) {
	c, s, g, done := heldAcrossNewDay(t, time.Minute)
	testwait.For(t, "the switch to hold requests", 10*time.Second, func() error {
		if !switchHolding(c) {
			return errors.New("not yet")
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("NewDay returned (%v) while the old day's request was on its way", err)
	default:
	}
	close(g.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	st := c.Stats()
	if before, after := splitAt(s, st.DayStarted); before != 1 || after != 1 {
		t.Errorf("/slow requested %d times before the new day began and %d after, want 1 and 1", before, after)
	}
	if st.DaySwitchSendWait <= 0 {
		t.Errorf("DaySwitchSendWait %v, want the wait counted", st.DaySwitchSendWait)
	}
}

// TestDaySwitchWaitBounded: a request that hangs holds the new day back
// no longer than Config.DaySwitchWait; it stays the old day's and the new
// day fetches the URL again.
func TestDaySwitchWaitBounded(t *testing.T) {
	const wait = 200 * time.Millisecond
	c, s, g, done := heldAcrossNewDay(t, wait)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("NewDay waited for a request that hangs")
	}
	st := c.Stats()
	if st.DaySwitchSendWait < wait {
		t.Errorf("DaySwitchSendWait %v, want at least %v", st.DaySwitchSendWait, wait)
	}
	if switchHolding(c) {
		t.Error("requests still held after the new day began")
	}
	close(g.open)
	waitIdle(t, c)
	if before, after := splitAt(s, st.DayStarted); before != 0 || after != 2 {
		t.Errorf("/slow requested %d times before the new day began and %d after, want 0 and 2 (the old day's, late, and the new day's)", before, after)
	}
}
