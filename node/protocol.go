package node

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/node/resolve"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// Protocol ids of the node-to-node services. The ring protocol itself lives
// in ring/p2p.
const archiveProtocol = resolve.Protocol

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
