package ring_test

import (
	"context"
	"sync"
	"testing"

	"github.com/herod-archive/herod/ring"
)

// TestRebalanceLive runs Rebalance on a live 20-node ring (memnet) whose
// nodes chose their indexes at join: after a few rounds every node's
// share is within [0.7, 1.3] of the mean and the ring is consistent.
func TestRebalanceLive(t *testing.T) {
	const n = 20
	// Every move first hands its range to the heir on another node
	// (Config.Moving): the virtual server's known range, ending at it.
	var mu sync.Mutex
	handed := map[ring.Node]ring.Node{} // moved virtual server -> heir
	c := &cluster{t: t, moving: func(_ context.Context, v ring.Node, r ring.Range, heir ring.Node) {
		if !r.Known || r.End != v.ID || heir.Peer == v.Peer {
			t.Errorf("Moving(%v, %+v, %v): want v's known range and a heir on another node", v, r, heir)
		}
		mu.Lock()
		handed[v] = heir
		mu.Unlock()
	}}
	c.init(n, 4, true)
	c.joinAll()
	waitConsistent(t, c, 200)
	before := shareRange(c.live())
	moves, handedOver := 0, 0
	for range 4 {
		for _, r := range c.live() {
			m, err := r.Rebalance(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, mv := range m {
				mu.Lock()
				if _, ok := handed[mv.From]; ok {
					handedOver++
				}
				mu.Unlock()
			}
			moves += len(m)
			c.rounds(3)
		}
	}
	waitConsistent(t, c, 200)
	after := shareRange(c.live())
	t.Logf("20 nodes: max/min share over the mean %.2f/%.2f before, %.2f/%.2f after %d moves (%d handed over to a heir on another node)", before[0], before[1], after[0], after[1], moves, handedOver)
	if moves > 0 && handedOver == 0 {
		t.Errorf("%d moves, none handed its range over", moves)
	}
	if after[0] > 1.3 || after[1] < 0.7 {
		t.Fatalf("shares after rebalancing: max %.2f, min %.2f of the mean", after[0], after[1])
	}
	checkLookups(t, c.live(), 200)
}

// shareRange returns the largest and smallest real node's part of the
// circle over the mean, from the nodes' own ranges.
func shareRange(rs []*ring.Ring) [2]float64 {
	parts := map[string]float64{}
	for _, r := range rs {
		for _, v := range r.Status().Vnodes {
			if v.Predecessor != nil {
				parts[r.Self().Peer] += ring.Frac(v.Predecessor.ID, v.Node.ID)
			}
		}
	}
	mean := 1 / float64(len(rs))
	out := [2]float64{0, 10}
	for _, p := range parts {
		out[0] = max(out[0], p/mean)
		out[1] = min(out[1], p/mean)
	}
	return out
}
