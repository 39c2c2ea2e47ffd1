package crawl

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// lavishBudget is a ring-wide budget whose owner lies: it grants every
// request at once.
type lavishBudget struct{}

func (lavishBudget) Wait(ctx context.Context, _ string, _ time.Duration) error { return ctx.Err() }

// TestCapBudgetHoldsAgainstLavishGrants: a Budget that grants every slot
// at once (a lying owner of the host's schedule) cannot make the crawler
// exceed HostRate to the host: Config.Budget is capped by a LocalBudget
// at HostRate (CapBudget).
func TestCapBudgetHoldsAgainstLavishGrants(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	const n = 12
	pages := map[string]string{}
	var paths []string
	for i := range n {
		p := fmt.Sprintf("/p%d", i)
		paths = append(paths, p)
		pages[p] = p
	}
	pages["/"] = links(nil, paths...)
	s := newSite(t, pages)
	cfg := testConfig(newClock())
	cfg.HostRate = 25
	cfg.HostConns = 4
	cfg.Budget = lavishBudget{}
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	start := time.Now()
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	rs := s.requests("")
	if len(rs) < n+2 {
		t.Fatalf("%d requests, want %d", len(rs), n+2)
	}
	checkSpacing(t, start, rs, 40*time.Millisecond)
}

// TestCapBudgetKeepsLocal: with no Budget, or a LocalBudget no faster than
// the cap, the crawler's budget is that LocalBudget itself (no second wait).
func TestCapBudgetKeepsLocal(t *testing.T) {
	lb := NewLocalBudget(2, nil)
	if got := CapBudget(lb, 2, nil); got != HostBudget(lb) {
		t.Errorf("CapBudget(LocalBudget at the cap) = %T, want the LocalBudget", got)
	}
	if _, ok := CapBudget(nil, 2, nil).(*LocalBudget); !ok {
		t.Error("CapBudget(nil) is not a LocalBudget")
	}
	if _, ok := CapBudget(lavishBudget{}, 2, nil).(*cappedBudget); !ok {
		t.Error("CapBudget(lavish) is not capped")
	}
	shared := NewSharedBudget(2, func() int { return 4 }, nil)
	if _, ok := CapBudget(shared, 2, nil).(*cappedBudget); !ok {
		t.Error("CapBudget(shared) is not capped")
	}
}
