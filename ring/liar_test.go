package ring_test

import (
	"context"
	"errors"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestLiarClaimsAnotherAddress: a peer that claims another node's
// address (to sit at that node's ids) or an address that is not its own
// is never admitted; a claimed address that answers as someone else is a
// counted lie.
func TestLiarClaimsAnotherAddress(t *testing.T) {
	c := newCluster(t, 6, 2)
	c.joinAll()
	waitConsistent(t, c, 20)
	ctx := context.Background()
	real := ring.Contact{Peer: "liar", Addr: "10.8.8.8:4001"}
	tr := c.net.Transport(real)
	tr.Handle(func(context.Context, string, *ring.Message) *ring.Message { return &ring.Message{} })
	victim := c.rings[0].Vnodes()[0]
	taken := c.rings[3].Self().Addr
	claims := []struct {
		node    ring.Node
		counted bool
	}{
		{ring.Node{ID: ring.VirtualID(taken, 0), Contact: ring.Contact{Peer: real.Peer, Addr: taken}}, true},
		{ring.Node{ID: ring.VirtualID("10.9.9.9:4001", 0), Contact: ring.Contact{Peer: real.Peer, Addr: "10.9.9.9:4001"}}, false},
		{ring.Node{ID: ring.VirtualID(real.Addr, 64), Contact: real, Index: 64}, true},
		{ring.Node{ID: victim.ID.AddPow2(0), Contact: real}, true},
		{ring.Node{ID: ring.VirtualID(real.Addr, 0), Contact: ring.Contact{Peer: "peer-002", Addr: real.Addr}}, true},
	}
	for _, cl := range claims {
		before := c.rings[0].Counters().Refused
		reply, err := tr.Call(ctx, c.rings[0].Self(), &ring.Message{Op: ring.OpNotify, To: victim.ID, From: &cl.node})
		if err != nil || reply.Err != ring.ErrCodeRefused {
			t.Fatalf("claim %s: %+v, %v; want refused", cl.node, reply, err)
		}
		if got := c.rings[0].Counters().Refused - before; (got > 0) != cl.counted {
			t.Fatalf("claim %s: %d refusals counted, want counted=%v", cl.node, got, cl.counted)
		}
	}
	// A whole ring.Ring that claims a free address gets nowhere either.
	liarTr := c.net.Transport(ring.Contact{Peer: "liar2", Addr: "10.8.8.9:4001"})
	liar, err := ring.New(ring.Config{Self: ring.Contact{Peer: "liar2", Addr: "10.9.9.8:4001"}, VirtualServers: 2, Clock: c.clock}, liarTr)
	if err != nil {
		t.Fatal(err)
	}
	defer liar.Close()
	_ = liar.Join(ctx, c.rings[0].Self())
	for range 3 {
		liar.Maintain(ctx)
		c.rounds(1)
	}
	if err := consistent(c.live()); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.live() {
		for _, v := range r.Status().Vnodes {
			for _, n := range append(v.Successors, fingerNodes(v)...) {
				if n.Peer == real.Peer || n.Peer == "liar2" {
					t.Fatalf("liar in %s's tables", v.Node)
				}
			}
		}
	}
	if st := c.rings[0].Status(); len(st.Refused) == 0 {
		t.Fatal("Status lists no refused claim")
	}
}

func refused(c *cluster) (n uint64) {
	for _, r := range c.live() {
		n += r.Counters().Refused
	}
	return n
}

func fingerNodes(v ring.VnodeStatus) []ring.Node {
	var out []ring.Node
	for _, f := range v.Fingers {
		out = append(out, f.Node)
	}
	return out
}

// TestForgedRoutingInformation: a peer that answers lookups and neighbour
// queries with forged vnodes (chosen ids, indexes above the maximum,
// other nodes' addresses) cannot get them admitted or returned.
func TestForgedRoutingInformation(t *testing.T) {
	c := newCluster(t, 4, 2)
	c.joinAll()
	waitConsistent(t, c, 20)
	self := ring.Contact{Peer: "forger", Addr: "10.7.7.7:4001"}
	honest := c.rings[1].Vnodes()[0]
	forged := []ring.Node{
		{ID: id.OfString("chosen"), Contact: self, Index: 0},
		{ID: ring.VirtualID(self.Addr, 1000), Contact: self, Index: 1000},
		{ID: ring.VirtualID(honest.Addr, 0), Contact: ring.Contact{Peer: self.Peer, Addr: honest.Addr}, Index: 0},
	}
	tr := c.net.Transport(self)
	tr.Handle(func(_ context.Context, _ string, m *ring.Message) *ring.Message {
		switch m.Op {
		case ring.OpStep:
			return &ring.Message{Op: m.Op, Done: true, From: &forged[0], Owners: forged}
		case ring.OpNeighbors:
			return &ring.Message{Op: m.Op, Pred: &forged[2], Nodes: forged}
		}
		return &ring.Message{Op: m.Op}
	})
	joiner := c.add(ring.Contact{Peer: "peer-new", Addr: "10.0.5.5:4001"})
	before := joiner.Counters().Refused
	err := joiner.Join(context.Background(), self)
	if !errors.Is(err, ring.ErrLookupFailed) {
		t.Fatalf("join through a forger = %v, want ErrLookupFailed", err)
	}
	// Joining properly afterwards works, and the forger stays out.
	if err := joiner.Join(context.Background(), c.rings[0].Self()); err != nil {
		t.Fatal(err)
	}
	waitConsistent(t, c, 20)
	checkLookups(t, c.live(), 30)
	if joiner.Counters().Refused == before {
		t.Fatal("forged owners not counted as refused")
	}
	if st := joiner.Status(); len(st.Refused) == 0 {
		t.Fatal("Status lists no refused claim")
	}
}
