package replication

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
)

// TestShortPushRoundOnceListsFill: records the push sent to fewer than
// k-1 replicas, because their range's successor list was still short
// (a forming ring), reach the replica the list names later by a round
// held as soon as the list names it, not at the next interval (an owner
// that died in between would leave them with 2 copies, or 1). An owner
// and two replicas on a mock network, k = 3, rounds an hour apart.
func TestShortPushRoundOnceListsFill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs := p2ptest.Hosts(t, 3)
	var cs [3]ring.Contact
	var ns [3]ring.Node
	for i := range cs {
		cs[i] = ring.Contact{Peer: hs[i].ID().String(), Addr: fmt.Sprintf("127.0.0.%d:4001", i+1)}
		ns[i] = ring.Node{ID: ring.VirtualID(cs[i].Addr, 0), Contact: cs[i]}
	}
	rng := ring.Range{Start: id.OfString("pred"), End: ns[0].ID, Known: true}
	stores := [3]*archive.Store{openStore(t), openStore(t), openStore(t)}
	// The owner's successor list names only the first replica until
	// fill is called.
	lists := &rangeRing{st: ring.Status{Vnodes: []ring.VnodeStatus{{Node: ns[0], Range: rng, Successors: []ring.Node{ns[1]}}}}}
	owner := New(Config{Self: cs[0], Local: stores[0], Source: stores[0], Open: p2ptest.Opener(hs[0]), K: 3, Ring: lists,
		Gate: func(s network.Stream) (ring.Node, bool) {
			return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, true
		}})
	owner.SetInterval(time.Hour)
	var reps [2]*Replicator
	for i := range reps {
		reps[i] = New(Config{Self: cs[i+1], Local: stores[i+1], Source: stores[i+1], Open: p2ptest.Opener(hs[i+1]), K: 3,
			Gate: func(network.Stream) (ring.Node, bool) { return ring.Node{Contact: cs[0]}, true },
			Ring: succsRing(func(context.Context, id.ID, int) ([]ring.Node, error) { return ns[:], nil })})
		hs[i+1].SetStreamHandler(Protocol, reps[i].Handle)
	}
	hs[0].SetStreamHandler(Protocol, owner.Handle)
	stores[0].OnAdd(owner.Notify)

	var wg sync.WaitGroup
	start := func(f func(context.Context)) { wg.Add(1); go func() { defer wg.Done(); f(ctx) }() }
	start(owner.Push)
	start(reps[0].Work)
	start(reps[1].Work)
	start(func(ctx context.Context) { owner.Run(ctx, nil) })
	defer func() { cancel(); wg.Wait() }()

	holds := func(s *archive.Store, es []archive.Entry) error {
		if _, lacks := holding(ctx, s, es); lacks != nil {
			return fmt.Errorf("%w; owner rounds %d, push %+v", lacks, owner.Stats().Rounds, owner.Stats().Push)
		}
		return nil
	}
	es := putInRange(ctx, t, stores[0], rng, 6)
	testwait.For(t, "the first replica holds every version", 30*time.Second, func() error { return holds(stores[1], es) })
	if st := owner.Stats(); st.Push.Short != int64(len(es)) {
		t.Fatalf("push short %d, want %d", st.Push.Short, len(es))
	}
	lists.setSuccessors(ns[1], ns[2])
	testwait.For(t, "the second replica holds every version, well before the next interval", 30*time.Second, func() error {
		return holds(stores[2], es)
	})
	testwait.For(t, "no short push pending", 30*time.Second, func() error {
		if owner.shortPending() {
			owner.mu.Lock()
			defer owner.mu.Unlock()
			return fmt.Errorf("%d records pushed short, %d when a round last found k-1 replicas", owner.st.Push.Short, owner.shortDone)
		}
		return nil
	})
	if n := owner.Stats().Rounds; n > 2 {
		t.Fatalf("%d rounds, want 1 (2 if a dispatch raced the first)", n)
	}
}
