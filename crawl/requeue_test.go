package crawl

import (
	"context"
	"strings"
	"testing"
	"time"
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
