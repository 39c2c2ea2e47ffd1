package p2phost

import (
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/ring"
)

// ParseContact reads a member address as given to --join: a multiaddr with
// a /p2p/ component and an IP and TCP port.
//
// A circuit address (.../p2p/RELAY/p2p-circuit/p2p/PEER) names a member
// reached through a relay: the contact is dialed through it.
func ParseContact(s string) (ring.Contact, error) {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return ring.Contact{}, fmt.Errorf("member address %q: %w", s, err)
	}
	if c, ok := RelayContactOf(m, ""); ok {
		return c, nil
	}
	ai, err := peer.AddrInfoFromP2pAddr(m)
	if err != nil {
		return ring.Contact{}, fmt.Errorf("member address %q: %w", s, err)
	}
	for _, a := range ai.Addrs {
		ip, err := a.ValueForProtocol(ma.P_IP4)
		if err != nil {
			ip, err = a.ValueForProtocol(ma.P_IP6)
		}
		if err != nil {
			continue
		}
		port, err := a.ValueForProtocol(ma.P_TCP)
		if err != nil {
			continue
		}
		return ring.Contact{Peer: ai.ID.String(), Addr: net.JoinHostPort(ip, port)}, nil
	}
	return ring.Contact{}, fmt.Errorf("member address %q: no IP and TCP port", s)
}
