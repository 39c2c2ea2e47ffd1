package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
	nodesearch "github.com/herod-archive/herod/node/search"
)

// waitBackfilled waits until n's start backfill finished and nothing
// waits to be indexed, and returns its search stats.
func waitBackfilled(t *testing.T, n *Node) nodesearch.Stats {
	t.Helper()
	var st nodesearch.Stats
	testwait.For(t, "the backfill done and the queue empty", time.Minute, func() error {
		st = n.SearchStats()
		if !st.Backfilled || st.Backlog > 0 || !n.search.Idle() {
			return fmt.Errorf("backfilled %v, backlog %d", st.Backfilled, st.Backlog)
		}
		return nil
	})
	return st
}

// TestSearchMarkRestart: a node that stops cleanly leaves a mark, and
// its next start indexes nothing again (it indexed everything before
// its stop) while every search still finds its targets; a node that
// stops without one (a crash: the mark removed) indexes everything it
// owns again.
func TestSearchMarkRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lr, c := searchRing(ctx, t, 2, 60)
	day := c.Day(4).Add(time.Hour)
	qs := c.TargetQueries(5, 10)
	want := map[string][]string{}
	for _, q := range qs {
		want[q.Q] = searchAt(t, lr.Nodes[0], q.Q, day)
		if !slices.Contains(want[q.Q], q.Target) {
			t.Fatalf("%q: %v lacks %s", q.Q, want[q.Q], q.Target)
		}
	}
	owned := waitBackfilled(t, lr.Nodes[1]).Indexed // stored after its start: indexed as stored
	if owned == 0 {
		t.Fatal("node 1 indexed nothing: it owns no page")
	}

	restart := func(removeMark bool) *Node {
		t.Helper()
		old := lr.Nodes[1]
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		mark := filepath.Join(old.cfg.DataDir, "search", nodesearch.MarkFile)
		if _, err := os.Stat(mark); err != nil {
			t.Fatalf("no mark after a clean stop: %v", err)
		}
		if removeMark {
			if err := os.Remove(mark); err != nil {
				t.Fatal(err)
			}
		}
		cfg := old.cfg
		cfg.Listen, cfg.Gateway = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Join = []string{lr.Nodes[0].Multiaddr()}
		back, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := back.Start(ctx); err != nil {
			back.Close()
			t.Fatal(err)
		}
		lr.Nodes[1] = back
		if err := lr.WaitStable(ctx); err != nil {
			t.Fatal(err)
		}
		return back
	}

	back := restart(false)
	st := waitBackfilled(t, back)
	if !st.Resumed || st.BackfillVersions != 0 {
		t.Errorf("after a clean stop: resumed %v, backfilled %d versions (of %d it owns); want resumed, none", st.Resumed, st.BackfillVersions, owned)
	}
	for _, q := range qs {
		if got := searchAt(t, back, q.Q, day); !slices.Equal(got, want[q.Q]) {
			t.Errorf("after a clean stop: %q gives %v, want %v", q.Q, got, want[q.Q])
		}
	}

	crashed := restart(true)
	st = waitBackfilled(t, crashed)
	if st.Resumed || st.BackfillVersions < owned {
		t.Errorf("without a mark: resumed %v, backfilled %d versions; want all %d it owns", st.Resumed, st.BackfillVersions, owned)
	}
}
