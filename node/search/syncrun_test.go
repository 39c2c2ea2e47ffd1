package search

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	fts "github.com/herod-archive/herod/search"

	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
)

// missedHolderRing is a ring of 4 sync nodes holding 2,000 postings
// with k holders each, but for the second node, which missed its share:
// the world, the nodes, the postings and that node.
func missedHolderRing(t *testing.T, k int) (*world, []*syncNode, []fts.Posting, *syncNode) {
	t.Helper()
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 4), k)
	for _, n := range ns {
		w.add(n.v)
	}
	ps := postings(2000)
	down := ns[1]
	putAt(t, w, ns, ps, k, func(n *syncNode, _ fts.Posting) bool { return n == down })
	return w, ns, ps, down
}

// runSyncAll sets up each node (set) and runs its RunSync until ctx
// ends; the returned function waits for them all to return.
func runSyncAll(ctx context.Context, ns []*syncNode, set func(*syncNode)) (stopped func()) {
	var wg sync.WaitGroup
	for _, n := range ns {
		set(n)
		wg.Go(func() { n.sv.RunSync(ctx, nil) })
	}
	return wg.Wait
}

// TestRunSyncQuiet: while postings are being stored (an indexer's pushes
// current) no round runs, however short the period; once they stop for
// the quiet time, rounds run and a holder that missed postings gets them
// all; rounds that find every pair in sync then stretch the period.
func TestRunSyncQuiet(t *testing.T) {
	const k = 3
	w, ns, ps, down := missedHolderRing(t, k)
	const interval, quiet = 20 * time.Millisecond, 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := runSyncAll(ctx, ns, func(n *syncNode) {
		n.sv.SyncInterval, n.sv.quiet = interval, quiet
		n.sv.notePut()
	})
	// Pushes current (the last one stored "now" for the next hour) for
	// 30 periods: no round may start.
	for _, n := range ns {
		n.sv.lastPut.Store(time.Now().Add(time.Hour).UnixNano())
	}
	time.Sleep(30 * interval) // the time in which rounds must not run
	for _, n := range ns {
		if r := n.sv.SyncStats().Rounds; r != 0 {
			t.Fatalf("%s: %d rounds while postings were being stored", n.v.Addr, r)
		}
	}
	for _, n := range ns { // the pushes end
		n.sv.notePut()
	}
	testwait.For(t, "the holder that missed postings gets them", 30*time.Second, func() error {
		return converged(t, w, ns, ps, k)
	})
	if down.sv.SyncStats().Pulled == 0 {
		t.Error("the holder that missed postings pulled nothing")
	}
	// In sync: the period doubles each round up to maxBackoff times
	// the interval, so 6 more rounds take at least 20+40+...+160 ms
	// (8× caps it at 160).
	r0, t0 := ns[0].sv.SyncStats().Rounds, time.Now()
	testwait.For(t, "six rounds in sync", 30*time.Second, func() error {
		if r := ns[0].sv.SyncStats().Rounds; r < r0+6 {
			return fmt.Errorf("%d rounds", r-r0)
		}
		return nil
	})
	if el, min := time.Since(t0), (20+40+80+160+160)*time.Millisecond; el < min {
		t.Errorf("6 rounds in sync in %v, want ≥ %v (the period stretched)", el, min)
	}
	cancel()
	stopped()
}

// TestRunSyncMaxDefer: postings stored without a pause put a due round
// off, but only until maxDefer has passed: then it runs, and the holder
// that missed postings gets them while the pushes go on.
func TestRunSyncMaxDefer(t *testing.T) {
	if SyncMaxDefer < 30*time.Minute {
		t.Fatalf("SyncMaxDefer %v: a ring that crawls all day would scan its stores every few minutes", SyncMaxDefer)
	}
	const k = 3
	w, ns, ps, _ := missedHolderRing(t, k)
	const interval, putOff = 20 * time.Millisecond, 400 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	stopped := runSyncAll(ctx, ns, func(n *syncNode) {
		n.sv.SyncInterval, n.sv.quiet, n.sv.maxDefer = interval, time.Hour, putOff
		n.sv.lastPut.Store(time.Now().Add(time.Hour).UnixNano()) // pushes current throughout
	})
	testwait.For(t, "the holder that missed postings gets them while pushes go on", 30*time.Second, func() error {
		return converged(t, w, ns, ps, k)
	})
	if el := time.Since(start); el < interval+putOff {
		t.Errorf("in sync after %v, before a round was due and put off %v", el, putOff)
	}
	cancel()
	stopped()
}

// TestRestAfter: a round rests syncDuty times its length; a peer that
// stalls the round stretches the rest to maxRest at most, this store's
// own scans to maxScanRest, so that sync keeps to about a twentieth of
// the time on a store whose scan takes minutes.
func TestRestAfter(t *testing.T) {
	for _, c := range []struct {
		wall, scanned, want time.Duration
	}{
		{time.Second, 0, 19 * time.Second},
		{time.Hour, time.Second, maxRest},                    // a stalled peer: 10 min
		{4 * time.Minute, 4 * time.Minute, 76 * time.Minute}, // a 4-minute scan: 76 min
		{10 * time.Hour, 10 * time.Hour, maxScanRest},        // bounded
		{40 * time.Second, 35 * time.Second, 11*time.Minute + 5*time.Second},
	} {
		if got := restAfter(c.wall, c.scanned); got != c.want {
			t.Errorf("restAfter(%v, %v) = %v, want %v", c.wall, c.scanned, got, c.want)
		}
	}
}
