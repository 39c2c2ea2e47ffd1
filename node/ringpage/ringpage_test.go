package ringpage

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

func newService(h host.Host, status func() ring.Status, summary ringview.PeerSummary) *Service {
	sv := &Service{
		Status:  status,
		Summary: func() ringview.PeerSummary { return summary },
		Host:    h,
		Open:    p2ptest.Opener(h),
	}
	k := kit.New(kit.Config{Host: h, Gate: func(network.Stream) (ring.Node, error) { return ring.Node{}, nil }})
	k.MustHandle(sv.Spec())
	return sv
}

// TestView: the page shows this node's virtual server, the nodes its
// routing state knows, and a summary of every real node: asked over
// Protocol, "unreachable" when it does not answer, refused when it names
// another peer.
func TestView(t *testing.T) {
	hs := p2ptest.Hosts(t, 4)
	node := func(i int) ring.Node {
		c := ring.Contact{Peer: hs[i].ID().String(), Addr: "127.0.0." + string(rune('1'+i)) + ":4001"}
		return ring.Node{ID: id.OfString(c.Addr), Contact: c}
	}
	a := newService(hs[0], func() ring.Status {
		return ring.Status{Self: node(0).Contact, Vnodes: []ring.VnodeStatus{{
			Node: node(0), Predecessor: new(node(3)), Successors: []ring.Node{node(1), node(2)},
		}}}
	}, ringview.PeerSummary{Peer: node(0).Peer, State: "up"})
	newService(hs[1], nil, ringview.PeerSummary{Peer: node(1).Peer, Versions: 7})
	newService(hs[2], nil, ringview.PeerSummary{Peer: "someone else"})
	// hs[3] serves no summary.
	view := a.View(context.Background())
	if len(view.Nodes) != 4 || !view.Nodes[0].Local || len(view.Nodes[0].Successors) != 2 {
		t.Fatalf("nodes %+v", view.Nodes)
	}
	state := map[string]ringview.PeerSummary{}
	for _, p := range view.Peers {
		state[p.Peer] = p
	}
	if len(view.Peers) != 4 || view.Peers[0].Peer != node(0).Peer {
		t.Fatalf("peers %+v: want this node first, then the 3 others", view.Peers)
	}
	if s := state[node(1).Peer]; s.State != "up" || s.Versions != 7 || s.Addr != node(1).Addr {
		t.Errorf("answering peer: %+v", s)
	}
	for _, i := range []int{2, 3} {
		if s := state[node(i).Peer]; s.State != "unreachable" {
			t.Errorf("peer %d: %+v, want unreachable", i, s)
		}
	}
}
