package ring_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/herod-archive/herod/ring"
)

func FuzzCheckAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:4001", "[::1]:80", "1.2.3.4:0", "010.0.0.1:1", "host:1", "[::ffff:1.2.3.4]:9", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ring.CheckAddr(s) != nil {
			return
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil || ap.String() != s || ap.Port() == 0 {
			t.Fatalf("CheckAddr accepted %q", s)
		}
	})
}

// FuzzHandle sends arbitrary messages to a live ring from an
// unauthenticated peer: nothing may panic, and nothing that fails CheckID
// may enter a routing table.
func FuzzHandle(f *testing.F) {
	n := ring.Node{ID: ring.VirtualID("10.0.0.9:4001", 1), Contact: ring.Contact{Peer: "fuzzer", Addr: "10.0.0.9:4001"}, Index: 1}
	for _, m := range []ring.Message{
		{Op: ring.OpPing},
		{Op: ring.OpStep, Key: n.ID},
		{Op: ring.OpNotify, From: &n},
		{Op: ring.OpSuggest, From: &n},
		{Op: ring.OpLeave, From: &n, Pred: &n, Nodes: []ring.Node{n}},
		{Op: ring.OpNeighbors},
		{Op: "bogus"},
	} {
		b, _ := json.Marshal(m)
		f.Add(b, true)
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, aim bool) {
		var m ring.Message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		c := newCluster(t, 2, 2)
		c.joinAll()
		fz := c.net.Transport(ring.Contact{Peer: "fuzzer", Addr: "10.0.0.9:4001"})
		fz.Handle(func(context.Context, string, *ring.Message) *ring.Message { return &ring.Message{} })
		if aim {
			m.To = c.rings[0].Vnodes()[0].ID
		}
		if _, err := fz.Call(context.Background(), c.rings[0].Self(), &m); err != nil {
			t.Fatalf("call: %v", err)
		}
		c.rounds(1)
		for _, v := range c.rings[0].Status().Vnodes {
			all := append([]ring.Node{}, v.Successors...)
			if v.Predecessor != nil {
				all = append(all, *v.Predecessor)
			}
			for _, x := range all {
				if err := ring.CheckID(x, ring.DefaultMaxVirtualServers); err != nil {
					t.Fatalf("%s admitted: %v", x, err)
				}
			}
		}
	})
}
