package sampleweb

import (
	"context"
	"crypto/sha1"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/temoto/robotstxt"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/racebuild"
)

// testCrawler is an independent crawler over the served bytes: it knows
// nothing of the model, only HTTP, robots.txt and HTML.
type testCrawler struct {
	t      testing.TB
	client *http.Client
	robots map[string]*robotstxt.RobotsData // by host:port
}

func newTestCrawler(t testing.TB) *testCrawler {
	return &testCrawler{
		t: t,
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		robots: make(map[string]*robotstxt.RobotsData),
	}
}

type fetched struct {
	status int
	sum    [20]byte
	links  []string // canonical, from HTML only, plus Location
}

func (c *testCrawler) allowed(u *url.URL) bool {
	r, ok := c.robots[u.Host]
	if !ok {
		resp, err := c.client.Get("http://" + u.Host + "/robots.txt")
		if err != nil {
			c.t.Fatalf("robots: %v", err)
		}
		r, err = robotstxt.FromResponse(resp)
		resp.Body.Close()
		if err != nil {
			c.t.Fatalf("robots parse: %v", err)
		}
		c.robots[u.Host] = r
	}
	return r.TestAgent(u.RequestURI(), "herod-test")
}

func (c *testCrawler) fetch(raw string) fetched {
	resp, err := c.client.Get(raw)
	if err != nil {
		c.t.Fatalf("get %s: %v", raw, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read %s: %v", raw, err)
	}
	f := fetched{status: resp.StatusCode, sum: sha1.Sum(body)}
	base, err := canon.Parse(raw)
	if err != nil {
		c.t.Fatalf("parse %s: %v", raw, err)
	}
	add := func(ref string) {
		if u, err := canon.Resolve(base, ref); err == nil {
			f.links = append(f.links, u)
		}
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		add(loc)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		return f
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		c.t.Fatalf("html %s: %v", raw, err)
	}
	for _, sel := range []struct{ css, attr string }{
		{"a[href]", "href"}, {"img[src]", "src"}, {`link[rel="stylesheet"][href]`, "href"},
		{"script[src]", "src"}, {"iframe[src]", "src"}, {"frame[src]", "src"},
	} {
		doc.Find(sel.css).Each(func(_ int, s *goquery.Selection) {
			v, _ := s.Attr(sel.attr)
			add(v)
		})
	}
	return f
}

// crawl does a breadth-first crawl from seeds that obeys robots.txt and,
// unless dynamic, skips URLs with a query. It returns what it fetched.
func (c *testCrawler) crawl(seeds []string, dynamic bool) map[string]fetched {
	got := make(map[string]fetched)
	var queue []string
	queued := make(map[string]bool)
	for _, s := range seeds {
		if u, err := url.Parse(s); err == nil && c.allowed(u) {
			queued[s] = true
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		f := c.fetch(u)
		got[u] = f
		for _, l := range f.links {
			pu, err := url.Parse(l)
			if err != nil || queued[l] || (!dynamic && pu.RawQuery != "") || !c.allowed(pu) {
				continue
			}
			queued[l] = true
			queue = append(queue, l)
		}
	}
	return got
}

func startWeb(t testing.TB, cfg Config) *Web {
	t.Helper()
	w := New(cfg)
	if err := w.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return w
}

func keys(m map[string]fetched) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func diff(t testing.TB, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	g, w := make(map[string]bool), make(map[string]bool)
	for _, s := range got {
		g[s] = true
	}
	for _, s := range want {
		w[s] = true
	}
	var extra, missing []string
	for s := range g {
		if !w[s] {
			extra = append(extra, s)
		}
	}
	for s := range w {
		if !g[s] {
			missing = append(missing, s)
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	t.Errorf("%s: %d vs %d URLs; unexpected %q; missing %q", what, len(got), len(want), first(extra, 5), first(missing, 5))
}

// TestCrawlMatchesModel crawls the served web day after day, re-fetching
// every known URL, and checks Reachable and NewVersions against it.
func TestCrawlMatchesModel(t *testing.T) {
	days := 6
	cfg := Config{Pages: 150, Seed: 7}
	if testing.Short() || racebuild.Enabled {
		days = 3
	}
	w := New(cfg)
	w.m.bodies.off = true // serve freshly rendered bytes: the cache trusts the model
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	c := newTestCrawler(t)
	known := make(map[string][20]byte)
	totalNew := 0
	for d := range days {
		w.SetDay(d)
		reached := c.crawl(w.Seeds(), false)
		diff(t, "Reachable", keys(reached), w.Reachable(d))

		var fresh []string
		for u := range reached {
			if _, ok := known[u]; !ok {
				fresh = append(fresh, u)
			}
		}
		for u, old := range known {
			f, ok := reached[u]
			if !ok {
				f = c.fetch(u)
			}
			if f.sum != old {
				fresh = append(fresh, u)
			}
		}
		for u, f := range reached {
			known[u] = f.sum
		}
		for u := range known {
			if _, ok := reached[u]; !ok {
				known[u] = c.fetch(u).sum
			}
		}
		sort.Strings(fresh)
		diff(t, "NewVersions", fresh, w.NewVersions(d))
		if d > 0 {
			totalNew += len(fresh)
		}
		for _, u := range w.Reachable(d) {
			if st := w.Status(d, u); st != reached[u].status {
				t.Errorf("day %d: Status(%s) = %d, served %d", d, u, st, reached[u].status)
			}
		}
	}
	if days > 1 && totalNew == 0 {
		t.Errorf("no new versions over %d days", days)
	}
}

// TestCrawlDynamic checks ReachableDynamic against a crawl that follows
// query URLs.
func TestCrawlDynamic(t *testing.T) {
	w := startWeb(t, Config{Pages: 120, Seed: 3})
	w.SetDay(2)
	got := keys(newTestCrawler(t).crawl(w.Seeds(), true))
	diff(t, "ReachableDynamic", got, w.ReachableDynamic(2))
	static := w.Reachable(2)
	if len(got) <= len(static) {
		t.Errorf("dynamic crawl reached %d URLs, static %d: no dynamic URLs", len(got), len(static))
	}
	for _, u := range static {
		if strings.Contains(u, "?") {
			t.Errorf("Reachable holds dynamic URL %s", u)
		}
	}
}

// TestRequestsRecorded checks the request log, and that a crawl obeying
// robots.txt never asks for the disallowed prefix.
func TestRequestsRecorded(t *testing.T) {
	w := startWeb(t, Config{Pages: 60})
	c := newTestCrawler(t)
	c.crawl(w.Seeds(), false)
	reqs := w.Requests()
	if len(reqs) < len(w.Reachable(0)) {
		t.Fatalf("recorded %d requests, reachable %d", len(reqs), len(w.Reachable(0)))
	}
	robots := 0
	for _, r := range reqs {
		if strings.HasPrefix(r.Path, disallowed) {
			t.Errorf("disallowed path fetched: %+v", r)
		}
		if r.Path == "/robots.txt" {
			robots++
		}
	}
	if robots != w.cfg.Hosts {
		t.Errorf("robots.txt fetched %d times, want %d", robots, w.cfg.Hosts)
	}

	w.ResetRequests()
	req, _ := http.NewRequest(http.MethodGet, w.Seeds()[1], nil)
	req.Header.Set("User-Agent", "herod/0.1 (+https://example.org/bot)")
	req.Header.Set("From", "ops@example.org")
	req.Header.Set("If-None-Match", `"x"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqs = w.Requests()
	want := Request{Host: strings.TrimPrefix(strings.TrimSuffix(w.Seeds()[1], "/"), "http://"), Path: "/", Method: "GET",
		UserAgent: "herod/0.1 (+https://example.org/bot)", From: "ops@example.org", Conditional: true, Status: 200}
	if len(reqs) != 1 {
		t.Fatalf("got %d requests after reset, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Time.IsZero() {
		t.Errorf("request time not recorded")
	}
	got.Time = want.Time
	if got != want {
		t.Errorf("request = %+v, want %+v", got, want)
	}
}

// TestConcurrentServing fetches while days change, for the race detector.
func TestConcurrentServing(t *testing.T) {
	w := startWeb(t, Config{Pages: 30})
	urls := w.Reachable(0)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			for j := i; j < len(urls); j += 4 {
				resp, err := http.Get(urls[j])
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for d := range 5 {
		w.SetDay(d)
		_ = w.NewVersions(d)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if w.Day() != 4 {
		t.Errorf("Day() = %d, want 4", w.Day())
	}
	if err := w.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }
