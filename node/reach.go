package node

import (
	"context"

	"github.com/herod-archive/herod/node/p2phost"
	"github.com/herod-archive/herod/node/reach"
)

// How a node is reached at its ring address (Status.Reach); see package
// reach.
const (
	ReachListen    = reach.Listen
	ReachMapped    = reach.Mapped
	ReachAnnounced = reach.Announced
	ReachRelayed   = reach.Relayed
)

// DefaultAddrTimeout bounds how long a node listening on an unspecified
// address waits for its router to map a public port.
const DefaultAddrTimeout = reach.DefaultTimeout

// AddressChanged delivers, once, the new public address of a node whose
// ring address its router maps (ReachMapped), when the router's public
// address changes — a home connection's IP changes overnight. The node's
// virtual-server ids derive from the old address, which no longer reaches
// it: its owner should Close it (it leaves the ring; the replicas hold its
// ranges' versions) and start a new node on the same data directory, which
// joins at the new address with new ids and keeps its archive (cmd/herod
// run does this). It never delivers for other nodes.
func (n *Node) AddressChanged() <-chan string { return n.addrChanged }

// watchAddress implements AddressChanged.
func (n *Node) watchAddress(ctx context.Context) {
	addr, err := reach.WatchMapped(ctx, n.host, n.self.Addr)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("cannot watch the public address", "err", err)
		}
		return
	}
	n.log.Warn("the router's public address changed: this node's ring ids derive from the old one", "old", n.self.Addr, "new", addr)
	n.addrChanged <- addr // buffered, sent once
}

// Members returns the multiaddrs of the ring members this node knows (its
// virtual servers' successors and predecessors), for joining again
// (p2phost.Members).
func (n *Node) Members() []string { return p2phost.Members(n.ring.Status(), n.self.Peer) }
