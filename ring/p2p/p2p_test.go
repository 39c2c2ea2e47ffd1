package p2p_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
	"github.com/herod-archive/herod/ring/ringtest"
)

// hosts numbers the test hosts: each listens on a loopback IP of its own,
// as real nodes do (ring ids derive from the IP, not the port).
var hosts atomic.Int64

func newHost(t *testing.T) host.Host {
	t.Helper()
	ip := fmt.Sprintf("127.0.0.%d", 20+hosts.Add(1)%200)
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/"+ip+"/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func factory(t *testing.T, n int) []ringtest.Endpoint {
	var out []ringtest.Endpoint
	for range n {
		h := newHost(t)
		c, err := p2p.ContactOf(h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ringtest.Endpoint{Contact: c, Transport: p2p.New(h, nil), Kill: func() { h.Close() }})
	}
	return out
}

func TestSuite(t *testing.T) { ringtest.Run(t, factory) }

func TestContactOf(t *testing.T) {
	h := newHost(t)
	c, err := p2p.ContactOf(h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Peer != h.ID().String() || ring.CheckAddr(c.Addr) != nil || c.Addr[:8] != "127.0.0." {
		t.Fatalf("ContactOf = %+v", c)
	}
}

type realNode struct {
	h  host.Host
	tr *p2p.Transport
	r  *ring.Ring
}

func startNode(t *testing.T, self *ring.Contact) *realNode {
	t.Helper()
	h := newHost(t)
	c, err := p2p.ContactOf(h)
	if err != nil {
		t.Fatal(err)
	}
	if self != nil {
		c = *self
		c.Peer = h.ID().String()
	}
	tr := p2p.New(h, nil)
	r, err := ring.New(ring.Config{Self: c, VirtualServers: 4, StabilizeInterval: 50 * time.Millisecond, CallTimeout: 2 * time.Second}, tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &realNode{h: h, tr: tr, r: r}
}

func rings(ns []*realNode) []*ring.Ring {
	var out []*ring.Ring
	for _, n := range ns {
		out = append(out, n.r)
	}
	return out
}

func lookupsAgree(ns []*realNode) error {
	all := ringtest.Vnodes(rings(ns))
	for _, n := range ns {
		for k := range 20 {
			key := id.OfString(fmt.Sprint("key", k))
			got, err := n.r.Lookup(context.Background(), key)
			if err != nil {
				return err
			}
			if want := ringtest.Owner(all, key); got.ID != want.ID {
				return fmt.Errorf("lookup %s = %s, want %s", key.Short(), got, want)
			}
		}
	}
	return nil
}

func TestRingOverLibp2p(t *testing.T) {
	if testing.Short() {
		t.Skip("real hosts")
	}
	ctx := context.Background()
	ns := []*realNode{startNode(t, nil), startNode(t, nil), startNode(t, nil)}
	for _, n := range ns[1:] {
		if err := n.r.Join(ctx, ns[0].r.Self()); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "3x4 ring consistent", 20*time.Second, func() error { return ringtest.Consistent(rings(ns)) })
	if err := lookupsAgree(ns); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "neighbours protected", 10*time.Second, func() error {
		if !ns[0].tr.Protected(ns[1].h.ID().String()) {
			return errors.New("node 1 not protected on node 0")
		}
		return nil
	})

	// Liars: a real host sends notifies claiming vnodes it may not have:
	// another node's address, an index above the maximum, a chosen id.
	lh := newHost(t)
	lc, err := p2p.ContactOf(lh)
	if err != nil {
		t.Fatal(err)
	}
	lt := p2p.New(lh, nil)
	lt.Handle(func(context.Context, string, *ring.Message) *ring.Message { return &ring.Message{} })
	victim := ns[0].r.Vnodes()[0]
	claims := []ring.Node{
		{ID: ring.VirtualID(ns[2].r.Self().Addr, 0), Contact: ring.Contact{Peer: lc.Peer, Addr: ns[2].r.Self().Addr}},
		{ID: ring.VirtualID(lc.Addr, 100), Contact: lc, Index: 100},
		{ID: victim.ID.AddPow2(0), Contact: lc, Index: 1},
		{ID: ring.VirtualID(lc.Addr, 1), Contact: ring.Contact{Peer: ns[1].r.Self().Peer, Addr: lc.Addr}, Index: 1},
	}
	before := ns[0].r.Counters().Refused
	for _, claim := range claims {
		reply, err := lt.Call(ctx, ns[0].r.Self(), &ring.Message{Op: ring.OpNotify, To: victim.ID, From: &claim})
		if err != nil || reply.Err != ring.ErrCodeRefused {
			t.Fatalf("claim %s: reply %+v, %v; want refused", claim, reply, err)
		}
	}
	if got := ns[0].r.Counters().Refused - before; got != uint64(len(claims)) {
		t.Fatalf("refused %d of %d lies", got, len(claims))
	}
	if err := ringtest.Consistent(rings(ns)); err != nil {
		t.Fatalf("a liar got in: %v", err)
	}

	// A fourth node joins and leaves gracefully: its neighbours are linked
	// again by the handover.
	extra := startNode(t, nil)
	if err := extra.r.Join(ctx, ns[1].r.Self()); err != nil {
		t.Fatal(err)
	}
	withExtra := append(append([]*realNode{}, ns...), extra)
	testwait.For(t, "4-node ring consistent", 20*time.Second, func() error { return ringtest.Consistent(rings(withExtra)) })
	succ, err := ns[0].r.Successors(ctx, id.OfString("k"), 3)
	if err != nil || len(succ) != 3 || succ[0].Peer == succ[1].Peer || succ[1].Peer == succ[2].Peer || succ[0].Peer == succ[2].Peer {
		t.Fatalf("Successors = %v, %v; want 3 on distinct nodes", succ, err)
	}
	if err := extra.r.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	extra.r.Close()
	// (That the handover alone links the neighbours, before any round, is
	// tested deterministically on memnet; here rounds run concurrently.)
	testwait.For(t, "ring consistent after leave", 20*time.Second, func() error { return ringtest.Consistent(rings(ns)) })

	// Crash node 1: the other two repair the ring.
	ns[1].r.Close()
	ns[1].h.Close()
	rest := []*realNode{ns[0], ns[2]}
	testwait.For(t, "ring repaired after crash", 30*time.Second, func() error { return ringtest.Consistent(rings(rest)) })
	testwait.For(t, "lookups after crash", 10*time.Second, func() error { return lookupsAgree(rest) })
}
