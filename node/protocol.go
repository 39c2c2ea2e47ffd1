package node

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/node/resolve"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// Protocol ids of the node-to-node services. The ring protocol itself lives
// in ring/p2p.
const archiveProtocol = resolve.Protocol

// Every node protocol handler is registered through the node's kit
// (package kit): membership gate, deadline, concurrent handlers, frame
// and request size limits, bad-frame accounting and panic containment
// apply to each alike. The packages that serve a protocol declare its
// Spec (forward, dayclaim, politeness, ringpage, purge, query); the
// handlers of resolve and replication still read their streams
// themselves (kit.Raw) and get the kit's limits declared here, around
// their own. The small request-and-reply protocols (claims, link
// batches, leases, robots records) are session protocols: the node
// sends them through its pool (Node.pool), which keeps a few streams to
// each member open between requests.

// Limits of the protocols whose handlers read their streams themselves:
// one request frame each (the packages' own limits, which they check
// again), and room for a second.
const (
	resolveRequest   = 64 << 10 // resolve's maxRequestFrame
	replicateRequest = replicate.MaxOfferRequest
)

// setupKit builds the node's protocol kit. Called from New once the
// trust gate exists, before any handler is registered.
func (n *Node) setupKit() {
	n.kit = kit.New(kit.Config{
		Host:       n.host,
		Gate:       n.members.Member,
		RefuseRole: n.refuseRole,
		BadFrame:   n.badFrame,
		Base:       func() context.Context { return n.ctx },
		Logger:     n.log.With("sub", "kit"),
	})
	n.pool = kit.NewPool(n.openStream, streamTimeout)
}

// rawSpec declares a protocol whose handler reads its stream itself.
func rawSpec(p protocol.ID, h func(network.Stream), frame int, deadline time.Duration, active int) kit.Spec {
	return kit.Spec{ID: p, Handle: kit.Raw(h), MaxFrame: frame, MaxRequest: 2 * int64(frame+10),
		Deadline: deadline, MaxActive: active}
}

// streamTimeout bounds each exchange of the node's own streams.
const streamTimeout = 30 * time.Second

// addrInfo returns the libp2p address of the real node behind c: its
// ip:port, or the circuit through its relay.
func addrInfo(c ring.Contact) (peer.AddrInfo, error) { return p2p.AddrInfo(c) }

// openStream opens a stream to the real node behind c with a deadline.
func (n *Node) openStream(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error) {
	ai, err := addrInfo(c)
	if err != nil {
		return nil, err
	}
	n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
	s, err := n.host.NewStream(network.WithAllowLimitedConn(ctx, string(p)), ai.ID, p)
	if err != nil {
		return nil, fmt.Errorf("open %s to %s: %w", p, c.Addr, err)
	}
	dl := time.Now().Add(streamTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = s.SetDeadline(dl)
	return s, nil
}

// ProtocolStats returns what the node's protocol kit refused or caught:
// streams reset for want of a slot, handlers that panicked.
func (n *Node) ProtocolStats() kit.Stats { return n.kit.Stats() }
