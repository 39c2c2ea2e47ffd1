package p2phost

import (
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
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

// JoinAddr returns the address other nodes pass to --join to reach c: a
// multiaddr with a /p2p/ component, through c's relay if it has one
// (ParseContact reads it back); "" if c names no valid peer or address.
func JoinAddr(c ring.Contact) string {
	ai, err := p2p.AddrInfo(c)
	if err != nil {
		return ""
	}
	addrs, err := peer.AddrInfoToP2pAddrs(&ai)
	if err != nil || len(addrs) == 0 {
		return ""
	}
	return addrs[0].String()
}

// Members returns the --join addresses (JoinAddr) of the ring members st
// shows, for joining again: each local virtual server's successors, then
// its predecessor; each peer once, self (a peer id) never, and members
// without one skipped.
func Members(st ring.Status, self string) []string {
	seen := map[string]bool{self: true}
	var out []string
	for _, v := range st.Vnodes {
		nodes := append([]ring.Node{}, v.Successors...)
		if v.Predecessor != nil {
			nodes = append(nodes, *v.Predecessor)
		}
		for _, m := range nodes {
			if seen[m.Peer] {
				continue
			}
			seen[m.Peer] = true
			if a := JoinAddr(m.Contact); a != "" {
				out = append(out, a)
			}
		}
	}
	return out
}
