package node

import (
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/node/status"
)

// Status is a node's state as /api/status and `herod status` show it
// (package status).
type Status = status.Status

// ForwardStats reports the link forwarder's progress (forward.Stats).
type ForwardStats = forward.Stats

// WireStats counts the stream bytes this node sent and received under one
// libp2p protocol (status.WireStats).
type WireStats = status.WireStats

// RingCallStats counts ring calls (status.RingCallStats).
type RingCallStats = status.RingCallStats

// LinkStats counts links other nodes sent to this one (status.LinkStats).
type LinkStats = status.LinkStats

// TrustStats counts requests refused at the trust boundary
// (status.TrustStats).
type TrustStats = status.TrustStats

// Status returns a snapshot of the node's state.
func (n *Node) Status() Status {
	ls, rs, ts := n.links.Stats(), n.links.ReforwardStats(), n.members.Stats()
	calls, relayed := n.tr.CallStats()
	return Status{
		Peer:      n.self.Peer,
		Addr:      n.self.Addr,
		Multiaddr: n.Multiaddr(),
		Gateway:   n.GatewayURL(),
		Reach:     n.reach,
		Relay:     n.self.Relay,
		RingCalls: RingCallStats{Calls: calls, Relayed: relayed},
		Replay:    n.ReplayURL(),
		Idle:      n.Idle(),
		Ring:      n.ring.Status(),
		Crawl:     n.crawler.Stats(),
		Archive:   n.store.Stats(),
		Claims:    n.claims.Stats(),
		Forward:   n.fwd.Stats(),
		Links: LinkStats{Received: ls.Received, BadLinks: ls.BadLinks, BadFrames: n.counters.badFrames.Load(),
			OverHops: ls.OverHops, KnownShared: ls.KnownShared, KnownReceived: ls.KnownReceived,
			ReforwardSpans: rs.Spans, ReforwardDropped: rs.Dropped, ReforwardRefused: rs.Refused,
			PassOnRefused: ls.PassOnRefused, OverHopDropped: ls.OverHopDropped},
		Politeness:  n.PolitenessStats(),
		Replication: n.ReplicationStats(),
		Trust: TrustStats{NotMember: ts.NotMember, Role: ts.Role, UnverifiedReads: n.resolve.Stats().Rejected, UnverifiedExports: n.query.Dropped(),
			UnverifiedListings: n.query.Unverified(),
			NotHeldRows:        n.query.NotHeld(),
			ExcludedPages:      n.query.Excluded(),
			UnverifiedLinks:    n.LinkVerifyStats().Dropped, UncheckedLinks: n.LinkVerifyStats().Unchecked},
		Purge:     n.PurgeStats(),
		Access:    n.accessStats(), // access.go
		Witness:   n.WitnessStats(),
		TakenOver: n.takeOver.Taken(),
		Wire:      status.Wire(n.bwc),
		Sessions:  n.pool.Stats(),
		Members:   status.NewMembers(n.cfg.Replicas, n.ringpage.Members()),
		Search:    n.SearchStats(), // search.go
		Load:      n.gatewayStats(),
		LinkSweep: n.LinkSweepStats(), // linksweep.go
	}
}

// gatewayStats returns the gateway's counters, zero before it is built.
func (n *Node) gatewayStats() gateway.Stats {
	if n.gw == nil {
		return gateway.Stats{}
	}
	return n.gw.Stats()
}
