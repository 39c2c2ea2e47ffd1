package ring_test

import (
	"context"
	"testing"

	"github.com/herod-archive/herod/ring"
)

// TestGhostPredecessorForgotten: a node comes back at its address with
// other virtual-server indexes (a restart after its indexes moved, or a
// move whose leave message was lost). Its old virtual servers are gone,
// but the peer answers pings: a successor that still holds one of them
// as its predecessor must find out and take the true one, or the ring
// never becomes consistent again (the true predecessor's notify is
// refused, since the ghost lies between it and the successor).
func TestGhostPredecessorForgotten(t *testing.T) {
	c := newCluster(t, 4, 4)
	c.joinAll()
	waitConsistent(t, c, 60)
	// Node 2 stops without leaving and comes back with indexes 10–13.
	self := c.rings[2].Self()
	c.rings[2].Close()
	r, err := ring.New(ring.Config{Self: self, VirtualServers: 4, Indexes: []int{10, 11, 12, 13}, Clock: c.clock}, c.net.Transport(self))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c.rings[2] = r
	if err := r.Join(context.Background(), c.rings[0].Self()); err != nil {
		t.Fatal(err)
	}
	waitConsistent(t, c, 60)
}

// TestAnswers: a node answers a ping naming one of its virtual servers,
// and one it no longer runs (it moved it); a dead node does not.
func TestAnswers(t *testing.T) {
	c := newCluster(t, 3, 2)
	c.joinAll()
	waitConsistent(t, c, 60)
	ctx := context.Background()
	v := c.rings[1].Vnodes()[0]
	if !c.rings[0].Answers(ctx, v) {
		t.Errorf("a live node's virtual server %s: no answer", v)
	}
	moved := ring.Node{ID: ring.VirtualID(v.Addr, 40), Contact: v.Contact, Index: 40}
	if !c.rings[0].Answers(ctx, moved) {
		t.Errorf("a live node asked about a virtual server it does not run: no answer")
	}
	c.kill(2)
	if c.rings[0].Answers(ctx, c.rings[2].Vnodes()[0]) {
		t.Errorf("a dead node answered")
	}
}
