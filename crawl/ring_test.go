package crawl

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestRingPolitenessEightNodes runs 8 crawlers, as the 8 nodes of a ring,
// on one host. Each owns its own pages; they share robots.txt through the
// owner (crawler 0) and pace themselves with a SharedBudget of 40
// requests/s for the whole ring. The recording server proves: robots.txt
// fetched once, no disallowed path fetched, and the aggregate rate within
// budget. Each node releases its j-th request no earlier than j/5 s after
// the start, so by time t at most 8*(1+5t) = 8 + 40t requests have been
// released; arrivals can only come later than releases, which makes the
// check safe on a loaded machine.
func TestRingPolitenessEightNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test (about 1.5 s)")
	}
	const nodes, perNode, ringRate = 8, 6, 40.0
	pages := map[string]string{}
	for i := range nodes * perNode {
		pages[fmt.Sprintf("/p%d", i)] = "page"
		pages[fmt.Sprintf("/private/p%d", i)] = "secret"
	}
	s := newSite(t, pages)
	s.robots = &page{status: 200, body: "User-agent: *\nDisallow: /private/\n"}
	clock := newClock()
	var crawlers []*Crawler
	for i := range nodes {
		cfg := testConfig(clock)
		cfg.Budget = NewSharedBudget(ringRate, func() int { return nodes }, clock.Now)
		if i > 0 {
			cfg.Robots = &countingSource{owner: crawlers[0]}
		}
		c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
		crawlers = append(crawlers, c)
	}
	start := time.Now()
	for i, c := range crawlers {
		var own []string
		for j := range perNode {
			own = append(own, s.url(fmt.Sprintf("/p%d", i*perNode+j)), s.url(fmt.Sprintf("/private/p%d", i*perNode+j)))
		}
		if err := c.Add(context.Background(), own); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range crawlers {
		waitIdle(t, c)
	}
	rs := s.requests("")
	if n := len(s.requests("/robots.txt")); n != 1 {
		t.Fatalf("robots.txt fetched %d times by the ring, want 1", n)
	}
	var pagesFetched int
	for _, r := range rs {
		if len(r.path) >= 9 && r.path[:9] == "/private/" {
			t.Fatalf("disallowed %s fetched", r.path)
		}
		if r.path != "/robots.txt" {
			pagesFetched++
		}
	}
	if pagesFetched != nodes*perNode {
		t.Fatalf("fetched %d pages, want %d", pagesFetched, nodes*perNode)
	}
	times := make([]time.Duration, len(rs))
	for i, r := range rs {
		times[i] = r.at.Sub(start)
	}
	slices.Sort(times)
	for k, at := range times {
		// k+1 requests had arrived by at: at most nodes + ringRate*at released.
		if allowed := float64(nodes) + ringRate*at.Seconds(); float64(k+1) > allowed+1e-9 {
			t.Fatalf("%d requests by %v, budget allows %.1f", k+1, at, allowed)
		}
	}
	t.Logf("%d requests in %v: %.1f/s against a ring budget of %.0f/s", len(rs), times[len(times)-1], float64(len(rs))/times[len(times)-1].Seconds(), ringRate)
}
