package replication

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
)

// TestPushLeftToRoundSoon: records whose offers failed twice (a replica
// that refused the owner, as one does while the ring forms and it does
// not yet see the sender as the range's owner) reach the replica by a
// round Settle after the failure, not at the next interval: an owner
// that died within the interval took them with it
// (cmd/herod TestProcessesKillAfterCrawl lost 26 URLs so, once in two
// runs). An owner and one replica on a mock network, rounds an hour
// apart.
func TestPushLeftToRoundSoon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs := p2ptest.Hosts(t, 2)
	ownerC := ring.Contact{Peer: hs[0].ID().String(), Addr: "127.0.0.1:4001"}
	replicaC := ring.Contact{Peer: hs[1].ID().String(), Addr: "127.0.0.2:4001"}
	ownerV := ring.Node{ID: ring.VirtualID(ownerC.Addr, 0), Contact: ownerC}
	replicaV := ring.Node{ID: ring.VirtualID(replicaC.Addr, 0), Contact: replicaC}
	rng := ring.Range{Start: replicaV.ID, End: ownerV.ID, Known: true} // (replica, owner]
	open := func(t *testing.T) *archive.Store {
		s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	os, rs := open(t), open(t)
	// The replica does not admit the owner's first two streams (an offer
	// and its retry), as a replica whose view of the ring lags does not.
	var streams atomic.Int32
	owner := New(Config{Self: ownerC, Local: os, Source: os, Open: p2ptest.Opener(hs[0]),
		Gate: func(network.Stream) (ring.Node, bool) { return ring.Node{Contact: replicaC}, true },
		Ring: statusRing{ring.Status{Vnodes: []ring.VnodeStatus{{Node: ownerV, Range: rng, Successors: []ring.Node{replicaV}}}}}})
	owner.SetInterval(time.Hour)
	replica := New(Config{Self: replicaC, Local: rs, Source: rs, Open: p2ptest.Opener(hs[1]),
		Gate: func(network.Stream) (ring.Node, bool) { return ring.Node{Contact: ownerC}, streams.Add(1) > 2 },
		Ring: succsRing(func(context.Context, id.ID, int) ([]ring.Node, error) { return []ring.Node{ownerV, replicaV}, nil })})
	hs[0].SetStreamHandler(Protocol, owner.Handle)
	hs[1].SetStreamHandler(Protocol, replica.Handle)
	os.OnAdd(owner.Notify)

	done := make(chan struct{}, 3)
	go func() { owner.Push(ctx); done <- struct{}{} }()
	go func() { replica.Work(ctx); done <- struct{}{} }()
	events := make(chan ring.Event, 8)
	go func() { owner.Run(ctx, events); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done; <-done }()

	var es []archive.Entry
	for i := 0; len(es) < 6; i++ {
		u := fmt.Sprintf("http://h.example/p%d", i)
		if !rng.Contains(id.OfString(u)) {
			continue
		}
		v, _, err := os.Put(ctx, archive.Capture{URL: u, Time: time.Now(), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<p>page %d</p>", i))})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, v.Entry())
	}
	testwait.For(t, "the offers failed twice", 30*time.Second, func() error {
		if st := owner.Stats().Push; st.Failed < int64(len(es)) {
			return fmt.Errorf("push %+v", st)
		}
		return nil
	})
	// Ring changes go on (the ring still forms): the round waits for
	// them to settle, and is not put off to the next interval.
	for range 3 {
		events <- ring.Event{Vnode: ownerV, NewRange: rng}
	}
	testwait.For(t, "every version on the replica, well before the next interval", 30*time.Second, func() error {
		n := 0
		for _, e := range es {
			if ok, err := rs.Holds(ctx, e); err == nil && ok {
				n++
			}
		}
		if n < len(es) {
			return fmt.Errorf("%d of %d; owner rounds %d, %+v", n, len(es), owner.Stats().Rounds, owner.Stats().Push)
		}
		return nil
	})
}
