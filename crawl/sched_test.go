package crawl

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

// TestHostTurns crawls 4 hosts with a single host loop at a time: every
// page is fetched, and hosts take turns (each yields after a batch) rather
// than one host running to its end while the others wait.
func TestHostTurns(t *testing.T) {
	const hosts, pages = 4, 2*hostBatch + 5
	var sites []*site
	var seeds []string
	for range hosts {
		ps := map[string]string{}
		for i := range pages {
			ps["/p"+strconv.Itoa(i)] = "page " + strconv.Itoa(i)
		}
		s := newSite(t, ps)
		sites = append(sites, s)
		for i := range pages {
			seeds = append(seeds, s.url("/p"+strconv.Itoa(i)))
		}
	}
	a := newMemArchive()
	cfg := testConfig(newClock())
	cfg.MaxActiveHosts = 1
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if got := len(a.urls()); got != hosts*pages {
		t.Fatalf("stored %d pages, want %d", got, hosts*pages)
	}
	// Idle comes when the last fetch ends; the loops then wind down (a
	// yielded host gets its turn, finds nothing and leaves).
	testwait.For(t, "the host loops to end", 10*time.Second, func() error {
		if st := c.Stats(); st.ActiveHosts != 0 || st.WaitingHosts != 0 {
			return fmt.Errorf("host loops still there after the crawl: %+v", st)
		}
		return nil
	})
	// Every host started before any host finished: turns were taken.
	var lastStart, firstEnd = sites[0].requests("")[0].at, sites[0].requests("")[0].at
	for i, s := range sites {
		rs := s.requests("")
		if len(rs) != pages+1 { // robots.txt and the pages
			t.Fatalf("host %d: %d requests", i, len(rs))
		}
		if rs[0].at.After(lastStart) {
			lastStart = rs[0].at
		}
		if end := rs[len(rs)-1].at; i == 0 || end.Before(firstEnd) {
			firstEnd = end
		}
	}
	if !lastStart.Before(firstEnd) {
		t.Fatalf("a host finished (%v) before the last one started (%v): no turns", firstEnd, lastStart)
	}
}
