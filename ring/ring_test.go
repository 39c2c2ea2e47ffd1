package ring_test

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

func TestVirtualIDLayout(t *testing.T) {
	b := []byte("127.0.0.1")
	b = binary.BigEndian.AppendUint32(b, 3)
	if got, want := ring.VirtualID("127.0.0.1:4001", 3), id.ID(sha1.Sum(b)); got != want {
		t.Fatalf("VirtualID = %s, want %s", got, want)
	}
	if ring.VirtualID("127.0.0.1:4001", 0) == ring.VirtualID("127.0.0.1:4001", 1) {
		t.Fatal("indexes collide")
	}
	// The port is not part of the id: nodes behind one IP share its positions.
	if ring.VirtualID("127.0.0.1:4001", 2) != ring.VirtualID("127.0.0.1:5001", 2) {
		t.Fatal("the port moved the id")
	}
	if ring.VirtualID("[2001:db8::1]:4001", 0) != ring.VirtualID("[2001:db8::1]:9", 0) {
		t.Fatal("the port moved an IPv6 id")
	}
}

func TestCheckID(t *testing.T) {
	good := ring.Node{ID: ring.VirtualID("10.0.0.1:4001", 2), Contact: ring.Contact{Peer: "p", Addr: "10.0.0.1:4001"}, Index: 2}
	tests := []struct {
		name string
		mod  func(*ring.Node)
		want error
	}{
		{"good", func(*ring.Node) {}, nil},
		{"index too big", func(n *ring.Node) { n.Index = 64; n.ID = ring.VirtualID(n.Addr, 64) }, ring.ErrBadIndex},
		{"negative index", func(n *ring.Node) { n.Index = -1 }, ring.ErrBadIndex},
		{"chosen id", func(n *ring.Node) { n.ID = id.OfString("anywhere") }, ring.ErrBadID},
		{"other addr", func(n *ring.Node) { n.Addr = "10.0.0.2:4001" }, ring.ErrBadID},
		{"non-canonical addr", func(n *ring.Node) { n.Addr = "010.0.0.1:4001" }, ring.ErrBadAddr},
		{"hostname", func(n *ring.Node) { n.Addr = "example.org:4001" }, ring.ErrBadAddr},
		{"port zero", func(n *ring.Node) { n.Addr = "10.0.0.1:0" }, ring.ErrBadAddr},
		{"no peer", func(n *ring.Node) { n.Peer = "" }, ring.ErrBadPeer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := good
			tt.mod(&n)
			err := ring.CheckID(n, 64)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CheckID = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	c := newCluster(t, 0, 4)
	bad := []ring.Config{
		{Self: ring.Contact{Peer: "p", Addr: "nope"}},
		{Self: ring.Contact{Addr: "10.0.0.1:1"}},
		{Self: ring.Contact{Peer: "p", Addr: "10.0.0.1:1"}, VirtualServers: 65},
		{Self: ring.Contact{Peer: "p", Addr: "10.0.0.1:1"}, SuccessorListLen: -1},
	}
	for _, cfg := range bad {
		if _, err := ring.New(cfg, c.net.Transport(cfg.Self)); !errors.Is(err, ring.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

func TestAloneOwnsEverything(t *testing.T) {
	c := newCluster(t, 1, 4)
	r := c.rings[0]
	c.rounds(2)
	if err := consistent(c.live()); err != nil {
		t.Fatal(err)
	}
	checkLookups(t, c.live(), 50)
	for k := range 50 {
		if !r.Owns(keyN(k)) {
			t.Fatalf("lone node does not own %s", keyN(k).Short())
		}
	}
	one := newCluster(t, 1, 1)
	got, err := one.rings[0].Lookup(context.Background(), keyN(1))
	if err != nil || got.ID != one.rings[0].Vnodes()[0].ID {
		t.Fatalf("single vnode lookup = %v, %v", got, err)
	}
}

func TestJoinAndLookup(t *testing.T) {
	for _, tt := range []struct{ nodes, vn int }{{2, 1}, {5, 4}, {12, 3}} {
		c := newCluster(t, tt.nodes, tt.vn)
		c.joinAll()
		n := waitConsistent(t, c, 20)
		t.Logf("%d nodes x %d vnodes consistent after %d extra rounds", tt.nodes, tt.vn, n)
		checkLookups(t, c.live(), 100)
		// Owns agrees with lookups everywhere.
		all := liveVnodes(c.live())
		for k := range 100 {
			o := owner(all, keyN(k))
			for _, r := range c.live() {
				if got := r.Owns(keyN(k)); got != (r.Self() == o.Contact) {
					t.Fatalf("%s Owns(%s) = %v, owner %s", r.Self(), keyN(k).Short(), got, o)
				}
			}
		}
	}
}

func TestFingersAndStatus(t *testing.T) {
	c := newCluster(t, 10, 4)
	c.joinAll()
	waitConsistent(t, c, 20)
	for _, r := range c.live() {
		r.RefreshFingers(context.Background())
	}
	all := liveVnodes(c.live())
	for _, r := range c.live() {
		for _, v := range r.Status().Vnodes {
			if len(v.Fingers) < 2 {
				t.Fatalf("%s has %d distinct fingers", v.Node, len(v.Fingers))
			}
			for _, f := range v.Fingers {
				if want := owner(all, v.ID.AddPow2(f.Index)); f.Node.ID != want.ID {
					t.Fatalf("%s finger %d = %s, want %s", v.Node, f.Index, f.Node, want)
				}
			}
			if len(v.Successors) != ring.DefaultSuccessorListLen {
				t.Fatalf("%s: %d successors", v.Node, len(v.Successors))
			}
		}
	}
	var hops, lookups uint64
	for _, r := range c.live() {
		for k := range 50 {
			if _, err := r.Lookup(context.Background(), keyN(k)); err != nil {
				t.Fatal(err)
			}
		}
		hops += r.Counters().Hops
		lookups += r.Counters().Lookups
	}
	if mean := float64(hops) / float64(lookups); mean > 4 {
		t.Fatalf("mean hops %.2f at 40 vnodes", mean)
	}
}
