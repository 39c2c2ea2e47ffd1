package crawl

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// TestRestartDenyHostRequeue: a node restarted with --deny-host H sends
// H no request on the next day, although H's URLs are known from the
// day before; the other host's are fetched again. (Issue 36: the daily
// re-queue skipped the scope check and fetched 13 of H's URLs.)
func TestRestartDenyHostRequeue(t *testing.T) {
	ctx := context.Background()
	keep := newSite(t, map[string]string{"/": "<p>kept</p>"})
	h := newSite(t, map[string]string{"/": links(nil, "/1", "/2", "/3"), "/1": "1", "/2": "2", "/3": "3"})
	dir := t.TempDir()
	a := newMemArchive()
	clock := newClock()
	c, _ := startCrawler(t, dir, testConfig(clock), a)
	if err := c.Add(ctx, []string{keep.url("/"), h.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if n := len(h.requests("")); n < 4 {
		t.Fatalf("day 1: %d requests to H, want its 4 pages", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	hHost := strings.TrimPrefix(h.srv.URL, "http://")
	before, keptBefore := len(h.requests("")), len(keep.requests("/"))
	cfg := testConfig(clock)
	cfg.DenyHosts = []string{hHost}
	clock.Add(24 * time.Hour)
	c2, _ := startCrawler(t, dir, cfg, a)
	if c2.Requeues(h.url("/1")) || !c2.Requeues(keep.url("/")) {
		t.Fatalf("Requeues: H %t, kept host %t", c2.Requeues(h.url("/1")), c2.Requeues(keep.url("/")))
	}
	if err := c2.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c2)
	if n := len(h.requests("")) - before; n != 0 {
		t.Errorf("next day: %d requests to the denied host %s", n, hHost)
	}
	if len(keep.requests("/")) == keptBefore {
		t.Error("next day: the kept host was not fetched again")
	}
}

// TestRecheckFetched: Recheck fetches a URL again the day it was fetched
// (Add alone does not), and Deps.Fetched is told what every fetch found:
// the stored version, a 304 (the stored payload), a changed page. A URL
// Recheck makes known is not shared (OnKnown), one Add makes known is.
func TestRecheckFetched(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, map[string]string{"/p": "<p>one</p>"})
	type told struct {
		status int
		digest id.ID
	}
	var mu sync.Mutex
	var got []told
	f := &loopForwarder{}
	d := depsOf(newMemArchive(), f)
	d.Fetched = func(_ context.Context, u string, status int, digest id.ID) {
		mu.Lock()
		defer mu.Unlock()
		if u == s.url("/p") {
			got = append(got, told{status, digest})
		}
	}
	c, err := New(t.TempDir(), testConfig(newClock()), d)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var shared []string
	c.OnKnown(func(urls []string) {
		mu.Lock()
		defer mu.Unlock()
		shared = append(shared, urls...)
	})
	check := func(step string, requests int, want ...told) {
		t.Helper()
		waitIdle(t, c)
		mu.Lock()
		defer mu.Unlock()
		if n := len(s.requests("/p")); n != requests || !slices.Equal(got, want) {
			t.Fatalf("%s: %d requests, told %v; want %d, %v", step, n, got, requests, want)
		}
	}
	one, two := told{200, id.Sum([]byte("<p>one</p>"))}, told{200, id.Sum([]byte("<p>two</p>"))}
	if err := c.Add(ctx, []string{s.url("/p")}); err != nil {
		t.Fatal(err)
	}
	check("first fetch", 1, one)
	if err := c.Add(ctx, []string{s.url("/p")}); err != nil {
		t.Fatal(err)
	}
	check("added again the same day", 1, one)
	if err := c.Recheck(ctx, []string{s.url("/p")}); err != nil {
		t.Fatal(err)
	}
	check("rechecked: a 304", 2, one, one)
	s.set("/p", "<p>two</p>")
	if err := c.Recheck(ctx, []string{s.url("/p")}); err != nil {
		t.Fatal(err)
	}
	check("rechecked: changed", 3, one, one, two)
	if err := c.Recheck(ctx, []string{s.url("/new")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	mu.Lock()
	defer mu.Unlock()
	if len(s.requests("/new")) != 1 || !slices.Equal(shared, []string{s.url("/p")}) {
		t.Fatalf("a rechecked new URL: %d requests; shared %v, want only the added one", len(s.requests("/new")), shared)
	}
}
