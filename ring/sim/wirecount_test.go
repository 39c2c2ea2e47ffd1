package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestWireCounter: a lookup on a counted ring counts its calls and
// bytes, and a message's size counts each peer id at PeerIDLen bytes, as
// the message with real-length ids encodes.
func TestWireCounter(t *testing.T) {
	var wc WireCounter
	s := New(Config{Nodes: 16, Seed: 3, Wrap: wc.Wrap})
	ctx := context.Background()
	if err := s.Build(ctx); err != nil {
		t.Fatal(err)
	}
	if wc.Calls != 0 || wc.Bytes != 0 {
		t.Fatalf("counted %d calls, %d bytes while off", wc.Calls, wc.Bytes)
	}
	wc.On = true
	_, tr, err := s.Live()[0].LookupTrace(ctx, id.OfString("some key"))
	wc.On = false
	if err != nil {
		t.Fatal(err)
	}
	if calls := tr.Hops + tr.Timeouts + tr.Pings; calls == 0 || wc.Calls != calls || wc.Bytes == 0 {
		t.Errorf("counted %d calls and %d bytes for a lookup of %d calls", wc.Calls, wc.Bytes, calls)
	}

	node := func(i int) ring.Node {
		c := Contact(i)
		return ring.Node{ID: ring.VirtualID(c.Addr, 0), Contact: c}
	}
	withRealID := func(n ring.Node) ring.Node {
		n.Peer = strings.Repeat("P", PeerIDLen)
		return n
	}
	from := node(0)
	m := &ring.Message{Op: ring.OpStep, From: &from}
	rm := &ring.Message{Op: ring.OpStep}
	rf := withRealID(from)
	rm.From = &rf
	for i := 1; i <= 8; i++ {
		m.Nodes = append(m.Nodes, node(i))
		rm.Nodes = append(rm.Nodes, withRealID(node(i)))
		m.Owners = append(m.Owners, node(10+i))
		rm.Owners = append(rm.Owners, withRealID(node(10+i)))
	}
	if got, want := messageSize(m), FrameSize(rm); got != want {
		t.Errorf("a step reply of 17 nodes: %d bytes, %d with real peer ids", got, want)
	}
}
