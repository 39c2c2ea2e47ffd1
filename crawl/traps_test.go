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
// HostNewURLs a day; the rest are counted as KindHostNewURLs and not
// fetched, while other hosts are not affected.
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
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	if err := c.Add(context.Background(), []string{s.url("/"), other.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	var got int
	for _, r := range s.requests("") {
		if r.path != "/robots.txt" {
			got++
		}
	}
	if got != capN {
		t.Errorf("%d pages of the capped host fetched, want %d", got, capN)
	}
	if n := c.Stats().ErrorsByKind[KindHostNewURLs]; n != links_+1-capN {
		t.Errorf("%d host_new_urls, want %d", n, links_+1-capN)
	}
	if len(other.requests("/")) != 1 {
		t.Errorf("other host: %d requests of /, want 1", len(other.requests("/")))
	}
}
