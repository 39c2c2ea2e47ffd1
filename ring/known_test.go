package ring_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// wantHolders is Successors' true answer: key's owner and the first
// vnodes of the next k-1 real nodes clockwise.
func wantHolders(all []ring.Node, key id.ID, k int) []ring.Node {
	o := owner(all, key)
	i := slices.IndexFunc(all, func(n ring.Node) bool { return n.ID == o.ID })
	out := []ring.Node{o}
	seen := map[string]bool{o.Peer: true}
	for j := 1; j < len(all) && len(out) < k; j++ {
		n := all[(i+j)%len(all)]
		if !seen[n.Peer] {
			seen[n.Peer] = true
			out = append(out, n)
		}
	}
	return out
}

// checkHolders compares r's Lookup and Successors(k) of n keys with the
// truth and returns the calls r sent meanwhile.
func checkHolders(t *testing.T, r *ring.Ring, all []ring.Node, n, k int) uint64 {
	t.Helper()
	calls := r.Counters().Calls
	for i := range n {
		key := keyN(i)
		got, err := r.Lookup(context.Background(), key)
		if err != nil || got.ID != owner(all, key).ID {
			t.Fatalf("%s lookup %s = %s, %v; want %s", r.Self(), key.Short(), got, err, owner(all, key))
		}
		hs, err := r.Successors(context.Background(), key, k)
		if err != nil || !sameNodes(hs, wantHolders(all, key, k)) {
			t.Fatalf("%s successors %s = %v, %v; want %v", r.Self(), key.Short(), hs, err, wantHolders(all, key, k))
		}
	}
	return r.Counters().Calls - calls
}

// TestLocalAnswers: in a ring of 4 nodes every node's tables cover the
// circle, so lookups and Successors are answered without a message, and
// right; Disowned sends them back to the iterative lookup for three
// rounds.
func TestLocalAnswers(t *testing.T) {
	c := newCluster(t, 4, 4)
	c.joinAll()
	waitConsistent(t, c, 20)
	all := liveVnodes(c.live())
	for _, r := range c.live() {
		before := r.Counters().LocalLookups
		if calls := checkHolders(t, r, all, 100, 3); calls != 0 {
			t.Fatalf("%s sent %d calls for lookups its tables cover", r.Self(), calls)
		}
		if got := r.Counters().LocalLookups - before; got != 200 {
			t.Fatalf("%s answered %d of 200 locally", r.Self(), got)
		}
	}
	r := c.rings[1]
	r.Disowned(keyN(0), all[0].Contact)
	if r.Counters().Disowned != 1 {
		t.Fatalf("Disowned counter = %d", r.Counters().Disowned)
	}
	if calls := checkHolders(t, r, all, 100, 3); calls == 0 {
		t.Fatal("after Disowned, lookups still answered locally")
	}
	c.clock.Advance(3*ring.DefaultStabilizeInterval + time.Second)
	c.rounds(1) // the owners are heard from again
	if calls := checkHolders(t, r, all, 100, 3); calls != 0 {
		t.Fatalf("three rounds after Disowned, lookups sent %d calls", calls)
	}
}

// TestLocalAnswerPingsUnheardOwner: an owner not heard from within two
// rounds is pinged before a lookup names it, so a node that died is not
// returned from stale tables.
func TestLocalAnswerPingsUnheardOwner(t *testing.T) {
	c := newCluster(t, 4, 4)
	c.joinAll()
	waitConsistent(t, c, 20)
	c.clock.Advance(2*ring.DefaultStabilizeInterval + time.Second)
	c.kill(2)
	r := c.rings[0]
	all := liveVnodes(c.live())
	for i := range 100 {
		key := keyN(i)
		got, err := r.Lookup(context.Background(), key)
		if err != nil || got.ID != owner(all, key).ID {
			t.Fatalf("lookup %s = %s, %v; want live owner %s", key.Short(), got, err, owner(all, key))
		}
	}
	if r.Counters().Calls == 0 {
		t.Fatal("no owner was pinged")
	}
}

// TestLocalAnswersLargeRing: where the tables do not cover the circle
// (40 nodes of 2 virtual servers, lists of 8), lookups are right and some
// go out as messages.
func TestLocalAnswersLargeRing(t *testing.T) {
	c := newCluster(t, 40, 2)
	c.joinAll()
	waitConsistent(t, c, 40)
	all := liveVnodes(c.live())
	r := c.rings[7]
	local := r.Counters().LocalLookups
	if calls := checkHolders(t, r, all, 100, 3); calls == 0 {
		t.Fatal("a node of a 40-node ring answered every lookup locally")
	}
	if r.Counters().LocalLookups == local {
		t.Fatal("no lookup was answered from the node's own stretches")
	}
}

// BenchmarkLookupFourNodes: a lookup in a ring of 4 nodes of 4 virtual
// servers (memnet), answered from the local tables (Lookup) and routed
// (LookupTrace, as every lookup was before), with the messages each sends:
// on libp2p each message is a stream, 130-160 CPU-µs for both ends
// (docs/replicate-cost.md).
func BenchmarkLookupFourNodes(b *testing.B) {
	c := &cluster{t: &testing.T{}}
	c.init(4, 4, false)
	c.joinAll()
	for i := 0; consistent(c.live()) != nil && i < 20; i++ {
		c.rounds(1)
	}
	r := c.rings[1]
	for _, bc := range []struct {
		name string
		look func(k id.ID) error
	}{
		{"local", func(k id.ID) error { _, err := r.Lookup(context.Background(), k); return err }},
		{"routed", func(k id.ID) error { _, _, err := r.LookupTrace(context.Background(), k); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			calls := r.Counters().Calls
			for i := range b.N {
				if err := bc.look(keyN(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Counters().Calls-calls)/float64(b.N), "messages/op")
		})
	}
}
