package p2phost

import (
	"context"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// lanService is the mDNS service name herod nodes announce on their LAN.
const lanService = "herod"

// lanFinder connects to the herod nodes libp2p's mDNS finds on the local
// network. Nodes of one household share their router's public IP, and
// routers without NAT loopback cannot reach a mapped port from the LAN
// side, so two such nodes reach each other, and verify each other's
// claims to that IP, over the LAN instead (ring/p2p Verify).
type lanFinder struct {
	h   host.Host
	ctx context.Context
}

// HandlePeerFound implements mdns.Notifee.
func (f lanFinder) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == f.h.ID() {
		return
	}
	f.h.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.RecentlyConnectedAddrTTL)
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	f.h.Connect(ctx, ai) // best effort: Verify connects again when it needs to
}

// StartLAN announces h on its LAN and connects to the other herod nodes
// there, until ctx ends; the returned closer stops it.
func StartLAN(ctx context.Context, h host.Host) (io.Closer, error) {
	s := mdns.NewMdnsService(h, lanService, lanFinder{h: h, ctx: ctx})
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}
