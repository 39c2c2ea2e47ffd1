package ring_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/ringtest"
)

func TestCrash(t *testing.T) {
	c := newCluster(t, 10, 4)
	c.joinAll()
	waitConsistent(t, c, 20)
	c.kill(3)
	c.kill(4) // two at once, likely adjacent somewhere
	n := waitConsistent(t, c, 10)
	t.Logf("repaired in %d rounds", n)
	checkLookups(t, c.live(), 100)
	for _, r := range c.live() {
		r.RefreshFingers(context.Background())
	}
	for _, r := range c.live() {
		for _, v := range r.Status().Vnodes {
			for _, f := range v.Fingers {
				if f.Node.Contact == c.rings[3].Self() {
					t.Fatalf("%s still has dead finger %s", v.Node, f.Node)
				}
			}
		}
	}
}

func TestLookupRoutesAroundDeadNodes(t *testing.T) {
	c := newCluster(t, 20, 2)
	c.joinAll()
	waitConsistent(t, c, 30)
	for _, r := range c.live() {
		r.RefreshFingers(context.Background())
	}
	for _, i := range []int{2, 5, 7, 11, 13} {
		c.kill(i)
	}
	// No maintenance round yet: tables still point at dead nodes, and
	// lookups must still find live owners. The dead answered their last
	// calls more than two rounds ago, so no lookup names one unpinged
	// (known.go).
	c.clock.Advance(2*ring.DefaultStabilizeInterval + time.Second)
	all := liveVnodes(c.live())
	var timeouts int
	for _, r := range c.live() {
		for k := range 40 {
			got, tr, err := r.LookupTrace(context.Background(), keyN(k))
			if err != nil {
				t.Fatalf("lookup from %s: %v", r.Self(), err)
			}
			timeouts += tr.Timeouts
			if want := owner(all, keyN(k)); got.ID != want.ID {
				t.Fatalf("lookup %s = %s, want live owner %s", keyN(k).Short(), got, want)
			}
		}
	}
	if timeouts == 0 {
		t.Fatal("no lookup met a dead node; the test proves nothing")
	}
}

func TestLeave(t *testing.T) {
	c := newCluster(t, 6, 3)
	c.joinAll()
	waitConsistent(t, c, 20)
	if err := c.rings[2].Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.dead[2] = true
	// The handover alone links the neighbours: no round needed.
	if err := ringtest.Linked(c.live()); err != nil {
		t.Fatalf("after leave, before any round: %v", err)
	}
	checkLookups(t, c.live(), 50)
	// Successor lists further back learn within r rounds.
	waitConsistent(t, c, ring.DefaultSuccessorListLen)
	if _, err := c.rings[2].Lookup(context.Background(), keyN(0)); err == nil {
		t.Fatal("a node that left still answers lookups")
	}
}

func TestSuccessorsDistinctRealNodes(t *testing.T) {
	c := newCluster(t, 5, 4)
	c.joinAll()
	waitConsistent(t, c, 20)
	all := liveVnodes(c.live())
	for k := range 30 {
		got, err := c.rings[0].Successors(context.Background(), keyN(k), 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].ID != owner(all, keyN(k)).ID {
			t.Fatalf("Successors = %v", got)
		}
		peers := map[string]bool{}
		for _, n := range got {
			peers[n.Peer] = true
		}
		if len(peers) != 3 {
			t.Fatalf("successors %v not on 3 real nodes", got)
		}
		// They are the first vnodes of new real nodes clockwise.
		i := slices.IndexFunc(all, func(n ring.Node) bool { return n.ID == got[0].ID })
		seen := map[string]bool{got[0].Peer: true}
		var want []ring.Node
		for j := 1; len(want) < 2; j++ {
			n := all[(i+j)%len(all)]
			if !seen[n.Peer] {
				seen[n.Peer] = true
				want = append(want, n)
			}
		}
		if got[1].ID != want[0].ID || got[2].ID != want[1].ID {
			t.Fatalf("successors %v, want %v", got[1:], want)
		}
	}
	small := newCluster(t, 2, 2)
	small.joinAll()
	waitConsistent(t, small, 10)
	got, err := small.rings[0].Successors(context.Background(), keyN(1), 3)
	if err != nil || len(got) != 2 {
		t.Fatalf("2-node ring: %v, %v; want 2 nodes", got, err)
	}
}

func TestPartitionAndHeal(t *testing.T) {
	c := newCluster(t, 8, 2)
	c.joinAll()
	waitConsistent(t, c, 20)
	var a, b []string
	var ra, rb []*ring.Ring
	for i, r := range c.rings {
		if i%2 == 0 {
			a, ra = append(a, r.Self().Addr), append(ra, r)
		} else {
			b, rb = append(b, r.Self().Addr), append(rb, r)
		}
	}
	c.net.Partition(a, b)
	for i := 0; ; i++ {
		if consistent(ra) == nil && consistent(rb) == nil {
			t.Logf("two rings after %d rounds", i)
			break
		}
		if i > 20 {
			t.Fatalf("sides did not form rings: %v / %v", consistent(ra), consistent(rb))
		}
		c.rounds(1)
	}
	checkLookups(t, ra, 20)
	checkLookups(t, rb, 20)
	c.net.Heal()
	n := waitConsistent(t, c, 60)
	t.Logf("one ring %d rounds after heal", n)
	checkLookups(t, c.live(), 50)
	var merges uint64
	for _, r := range c.rings {
		merges += r.Counters().Merges
	}
	if merges == 0 {
		t.Fatal("healed without merge probing: the test proves nothing")
	}
}

func TestMessageLoss(t *testing.T) {
	c := newCluster(t, 10, 2)
	c.joinAll()
	waitConsistent(t, c, 20)
	c.net.SetLoss(0.05)
	fails := 0
	for k := range 300 {
		if _, err := c.rings[k%10].Lookup(context.Background(), keyN(k)); err != nil {
			fails++
		}
		if k%30 == 0 {
			c.rounds(1)
		}
	}
	if fails > 6 {
		t.Fatalf("%d of 300 lookups failed at 5%% loss", fails)
	}
	c.net.SetLoss(0)
	waitConsistent(t, c, 20)
}

func TestStartRunsRoundsOnTheClock(t *testing.T) {
	c := newCluster(t, 2, 2)
	if err := c.rings[1].Join(context.Background(), c.rings[0].Self()); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.rings {
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.rings[0].Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
	// Advance the fake clock whenever both loops wait on it; rounds happen
	// only when the clock moves. Rounds counts a round as it starts, and
	// how many the two nodes' four virtual servers need depends on how
	// their rounds interleave: stop once each ran five and, with both
	// loops waiting on the clock (no round half done), the ring is
	// consistent. Close cancels a round in flight, whose failed calls may
	// drop a successor: the ring is checked before it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r0, r1 := c.rings[0].Counters().Rounds, c.rings[1].Counters().Rounds
		if c.clock.Waiters() == 2 {
			err := consistent(c.rings)
			if r0 >= 5 && r1 >= 5 && err == nil {
				break
			}
			c.clock.Advance(ring.DefaultStabilizeInterval * 3 / 2)
		}
		if time.Now().After(deadline) {
			t.Fatalf("rounds %d/%d, %d loops waiting: %v", r0, r1, c.clock.Waiters(), consistent(c.rings))
		}
		time.Sleep(time.Millisecond)
	}
	for _, r := range c.rings {
		r.Close()
	}
	if _, err := c.rings[0].Lookup(context.Background(), keyN(1)); err == nil {
		t.Fatal("lookup after Close succeeded")
	}
}

type mapResolver map[string]ring.Contact

func (m mapResolver) Resolve(_ context.Context, p string) (ring.Contact, error) {
	if c, ok := m[p]; ok {
		return c, nil
	}
	return ring.Contact{}, ring.ErrUnreachable
}

// TestPeerMovedIsFoundAgain: a node restarts at a new address (new ids)
// knowing nobody; the others find it through the resolver and the rings
// merge.
func TestPeerMovedIsFoundAgain(t *testing.T) {
	res := mapResolver{}
	c := newCluster(t, 0, 2)
	for i := range 4 {
		self := contactOf(i)
		r, err := ring.New(ring.Config{Self: self, VirtualServers: 2, Clock: c.clock, Resolver: res}, c.net.Transport(self))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		c.rings = append(c.rings, r)
	}
	c.joinAll()
	waitConsistent(t, c, 20)
	c.kill(3)
	waitConsistent(t, c, 10)
	moved := ring.Contact{Peer: contactOf(3).Peer, Addr: "10.0.9.9:4001"}
	res[moved.Peer] = moved
	c.add(moved)
	n := waitConsistent(t, c, 80)
	t.Logf("moved peer back in the ring after %d rounds", n)
	checkLookups(t, c.live(), 30)
}
