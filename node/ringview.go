package node

import (
	"context"

	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/ring"
)

// ringView is what the gateway's /ring page draws: this node's virtual
// servers with their routing state, and every other virtual server they
// know of through successor lists, predecessors and fingers, and a summary
// of every real node among them, asked over summaryProtocol.
func (n *Node) ringView(ctx context.Context) gateway.RingView {
	st := n.ring.Status()
	view := gateway.RingView{Self: st.Self.Peer}
	seen := map[string]bool{}
	add := func(x ring.Node) {
		k := x.ID.String()
		if seen[k] {
			return
		}
		seen[k] = true
		view.Nodes = append(view.Nodes, gateway.RingNode{
			ID: k, Index: x.Index, Peer: x.Peer, Addr: x.Addr, Local: x.Peer == st.Self.Peer,
		})
	}
	for _, v := range st.Vnodes {
		rn := gateway.RingNode{ID: v.ID.String(), Index: v.Index, Peer: v.Peer, Addr: v.Addr, Local: true}
		if v.Predecessor != nil {
			rn.Predecessor = v.Predecessor.ID.String()
		}
		for _, s := range v.Successors {
			rn.Successors = append(rn.Successors, s.ID.String())
		}
		seen[rn.ID] = true
		view.Nodes = append(view.Nodes, rn)
	}
	for _, v := range st.Vnodes {
		if v.Predecessor != nil {
			add(*v.Predecessor)
		}
		for _, s := range v.Successors {
			add(s)
		}
		for _, f := range v.Fingers {
			add(f.Node)
		}
	}
	// Every real node met above, asked for its summary.
	var others []ring.Contact
	for _, x := range view.Nodes {
		if !x.Local && x.Addr != "" {
			others = append(others, ring.Contact{Peer: x.Peer, Addr: x.Addr})
		}
	}
	view.Peers = n.summaries(ctx, others)
	return view
}
