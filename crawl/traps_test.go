package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// loopRedirects is a RedirectSender for a lone crawler: the crawler owns
// every URL, so a redirect's target goes back to its own AddRedirect.
type loopRedirects struct{ c *Crawler }

func (l *loopRedirects) SendRedirect(ctx context.Context, target string, depth int, req bool) error {
	return l.c.AddRedirect(ctx, target, depth, req)
}

// trapSite is an endless redirect chain, /r/N redirecting to /r/N+1,
// each a separate URL, recording the N requested. After moved is set, its
// targets are /s/N+1 (changed answers, fresh targets).
type trapSite struct {
	srv   *httptest.Server
	mu    sync.Mutex
	hits  []int
	moved bool
}

func newTrapSite(t *testing.T) *trapSite {
	s := &trapSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Path[min(len(r.URL.Path), 3):])
		if err != nil || !(strings.HasPrefix(r.URL.Path, "/r/") || strings.HasPrefix(r.URL.Path, "/s/")) {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.hits = append(s.hits, n)
		prefix := "/r/"
		if s.moved {
			prefix = "/s/"
		}
		s.mu.Unlock()
		http.Redirect(w, r, fmt.Sprintf("%s%d", prefix, n+1), http.StatusFound)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *trapSite) requested() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.hits...)
}

// TestRedirectTrapBounded: an endless chain of redirects, each target a
// new queue entry, is followed for MaxRedirects redirects and no further,
// on the first day and after a new day whose answers name new targets
// (the depth is kept with the known URL), and each cut is counted as
// KindRedirectChain.
func TestRedirectTrapBounded(t *testing.T) {
	s := newTrapSite(t)
	cfg := testConfig(newClock())
	cfg.MaxRedirects = 5
	lr := &loopRedirects{}
	cfg.Redirects = lr
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	lr.c = c
	if err := c.Add(context.Background(), []string{s.srv.URL + "/r/0"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	check := func(day string, want int, cut int64) {
		t.Helper()
		hits := s.requested()
		for _, n := range hits {
			if n > cfg.MaxRedirects {
				t.Fatalf("%s: /r/%d fetched, chain bound %d (requests %v)", day, n, cfg.MaxRedirects, hits)
			}
		}
		if len(hits) != want {
			t.Errorf("%s: %d requests %v, want %d", day, len(hits), hits, want)
		}
		if got := c.Stats().ErrorsByKind[KindRedirectChain]; got != cut {
			t.Errorf("%s: %d redirect_chain, want %d", day, got, cut)
		}
	}
	check("day 0", cfg.MaxRedirects+1, 1)
	if n := len(a.urls()); n != cfg.MaxRedirects+1 {
		t.Errorf("%d URLs stored, want %d", n, cfg.MaxRedirects+1)
	}
	// Day 1: /r/N now redirects to /s/N+1. The known /r/0../r/5 are
	// fetched again, each at its depth: /r/N's new target /s/N+1 comes at
	// depth N+1, so /s/1../s/5 are fetched (their own targets are known
	// /s/ URLs or past the bound) and /r/5's target /s/6 is cut.
	s.mu.Lock()
	s.moved = true
	s.mu.Unlock()
	if err := c.NewDay(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	check("day 1", 2*(cfg.MaxRedirects+1)+cfg.MaxRedirects, 2)
}

// TestHostNewURLsCap: a host's URLs never known before are queued up to
// HostNewURLs a day; the rest are counted as KindHostNewURLs and deferred
// to the next days, queued there up to the cap, so every URL is fetched in
// the end, no day fetching more than the cap of new ones; other hosts are
// not affected.
func TestHostNewURLsCap(t *testing.T) {
	const links_, capN = 12, 5
	pages := map[string]string{}
	var paths []string
	for i := range links_ {
		p := fmt.Sprintf("/p%d", i)
		paths = append(paths, p)
		pages[p] = p
	}
	pages["/"] = links(nil, paths...)
	s := newSite(t, pages)
	other := newSite(t, map[string]string{"/": "other"})
	cfg := testConfig(newClock())
	cfg.HostNewURLs = capN
	dir := t.TempDir()
	c, _ := startCrawler(t, dir, cfg, newMemArchive())
	if err := c.Add(context.Background(), []string{s.url("/"), other.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	seen := map[string]bool{}
	fetchedNew := func() int {
		n := 0
		for _, r := range s.requests("") {
			if r.path != "/robots.txt" && !seen[r.path] {
				seen[r.path] = true
				n++
			}
		}
		return n
	}
	if got := fetchedNew(); got != capN {
		t.Errorf("day 0: %d pages of the capped host fetched, want %d", got, capN)
	}
	if n := c.Stats().ErrorsByKind[KindHostNewURLs]; n != links_+1-capN {
		t.Errorf("day 0: %d host_new_urls, want %d", n, links_+1-capN)
	}
	if len(other.requests("/")) != 1 {
		t.Errorf("other host: %d requests of /, want 1", len(other.requests("/")))
	}
	// The next days queue the deferred URLs, capN a day, until none is
	// left.
	for day, want := range []int{capN, links_ + 1 - 2*capN, 0} {
		if err := c.NewDay(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, c)
		if got := fetchedNew(); got != want {
			t.Errorf("day %d: %d new pages fetched, want %d", day+1, got, want)
		}
	}
	if len(seen) != links_+1 {
		t.Errorf("%d pages fetched in all, want %d", len(seen), links_+1)
	}
}

// TestDeferredBacklog: past a host's cap, new URLs are deferred up to
// maxDeferredFactor caps and dropped beyond; the backlog survives a
// restart and a new day queues a cap of it.
func TestDeferredBacklog(t *testing.T) {
	const capN = 2
	dir := t.TempDir()
	q, err := openQueue(dir, capN)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for i := range 30 {
		urls = append(urls, fmt.Sprintf("http://trap.example/%d", i))
	}
	added, fresh, capped, err := q.add(urls, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != capN || fresh != capN || len(capped) != len(urls)-capN {
		t.Fatalf("added %d, fresh %d, capped %d; want %d, %d, %d", len(added), fresh, len(capped), capN, capN, len(urls)-capN)
	}
	if got := q.deferred["trap.example"]; got != maxDeferredFactor*capN {
		t.Fatalf("%d deferred, want %d", got, maxDeferredFactor*capN)
	}
	if err := q.close(); err != nil {
		t.Fatal(err)
	}
	q, err = openQueue(dir, capN)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	if got := q.deferred["trap.example"]; got != maxDeferredFactor*capN {
		t.Fatalf("after reopening: %d deferred, want %d", got, maxDeferredFactor*capN)
	}
	hosts, n, fresh2, err := q.newDay(q.currentDay()+1, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The two known URLs again, and a cap of deferred ones.
	if hosts["trap.example"] != 2*capN || n != 2*capN || fresh2 != capN {
		t.Fatalf("new day queued %v (%d, %d fresh), want %d of trap.example, %d fresh", hosts, n, fresh2, 2*capN, capN)
	}
	if got := q.deferred["trap.example"]; got != maxDeferredFactor*capN-capN {
		t.Fatalf("after a new day: %d deferred, want %d", got, maxDeferredFactor*capN-capN)
	}
	// The day's cap is spent by the promoted URLs.
	if added, _, _, err := q.add([]string{"http://trap.example/new"}, 0); err != nil || len(added) != 0 {
		t.Fatalf("a new URL after the promoted ones: added %d, err %v; want none", len(added), err)
	}
}

// FuzzQueueValues: the queue and known-set values a redirect depth rides
// in parse back to what was written, and any bytes parse without panic.
func FuzzQueueValues(f *testing.F) {
	f.Add("http://example.org/a", 0, []byte("http://x/"))
	f.Add("http://example.org/r/7", 7, []byte{1, 3, 'h'})
	f.Add("https://e/", 300, []byte{0, 0, 0, 0, 0, 0, 0, 1, 9})
	f.Fuzz(func(t *testing.T, u string, depth int, raw []byte) {
		parseEntryValue(raw)
		parseKnownValue(raw)
		parseDeferredValue(raw)
		if !strings.HasPrefix(u, "http") {
			return
		}
		want := min(max(depth, 0), maxRedirectDepth)
		if gu, gd := parseEntryValue(entryValue(u, depth)); gu != u || gd != want {
			t.Fatalf("entry (%q, %d) -> (%q, %d)", u, depth, gu, gd)
		}
		if d, gd, ok := parseKnownValue(knownValue(42, depth)); !ok || d != 42 || gd != want {
			t.Fatalf("known (42, %d) -> (%d, %d, %v)", depth, d, gd, ok)
		}
		if gd := parseDeferredValue(deferredValue(depth)); gd != want {
			t.Fatalf("deferred %d -> %d", depth, gd)
		}
	})
}
