package node

import (
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/node/member"
	"github.com/herod-archive/herod/ring"
)

// The trust boundary is package member's: one Gate decides which peers
// are ring members, and every protocol handler passes it first.

// setupMembers builds the node's trust gate. Called from New, once the
// ring's transport and the store exist; Start sets its Ring (buildRing)
// before it registers any handler.
func (n *Node) setupMembers() {
	n.members = &member.Gate{
		Self:    n.self.Peer, // Ring is set once it exists (buildRing)
		Call:    n.tr.Call,
		Addrs:   n.host.Peerstore().Addrs,
		Refuses: n.store.Refuses,
		Logger:  n.log,
	}
}

// gate is member.Gate.Gate: the member a stream comes from, or false
// with the stream reset.
func (n *Node) gate(s network.Stream) (ring.Node, bool) { return n.members.Gate(s) }

// admit is member.Gate.Admit, for handlers that need no member.
func (n *Node) admit(s network.Stream) bool { return n.members.Admit(s) }

// refuseRole counts and logs a member's request outside its role.
func (n *Node) refuseRole(m ring.Node, proto string, err error) { n.members.RefuseRole(m, proto, err) }

// badFrame counts an inbound request that did not parse (Status.Links).
func (n *Node) badFrame() { n.counters.badFrames.Add(1) }
