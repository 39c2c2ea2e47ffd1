package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/herod-archive/herod/ring"
)

// How a node is reached at its ring address (Status.Reach).
const (
	// ReachListen: the node listens on its ring address itself (a public
	// interface address, or a LAN or loopback ring).
	ReachListen = "listen"
	// ReachMapped: the node listens on a private address behind a router
	// that mapped a public port to it by UPnP IGD or NAT-PMP, found by
	// libp2p's port mapping; the ring address is the router's public IP
	// and the mapped port.
	ReachMapped = "mapped"
	// ReachAnnounced: the operator gave the ring address (--announce), for
	// a port forwarded by hand.
	ReachAnnounced = "announced"
)

// DefaultAddrTimeout bounds how long a node listening on an unspecified
// address waits for its router to map a public port.
const DefaultAddrTimeout = 30 * time.Second

// errNoPublicAddr reports that a node behind NAT found no public address.
var errNoPublicAddr = errors.New("no public address")

// listensUnspecified reports whether the listen address is 0.0.0.0 or ::.
func listensUnspecified(listen string) bool {
	ap, err := netip.ParseAddrPort(listen)
	return err == nil && ap.Addr().IsUnspecified()
}

// wantsPortMap reports whether the node should ask its router for a port
// mapping: it listens on all interfaces or on a private (RFC 1918, ULA)
// address. A node on loopback or on a public address does not: asking
// would only send discovery traffic to whatever gateway the machine has.
func wantsPortMap(listen string) bool {
	ap, err := netip.ParseAddrPort(listen)
	if err != nil {
		return false
	}
	return ap.Addr().IsUnspecified() || ap.Addr().IsPrivate()
}

// ringAddress returns the address the node's virtual-server ids derive
// from and other members verify by dialing it, and how it is reached:
//
//   - the announced address, when the operator gives one;
//   - the listen address, when it is a concrete IP;
//   - otherwise (0.0.0.0 or ::) the first public IPv4 TCP address the host
//     has within timeout: an interface's own public address, or the
//     router's public IP and the port it mapped by UPnP IGD or NAT-PMP
//     (libp2p's NATPortMap adds it to the host's addresses).
//
// A node that finds none cannot be reached by the ring and cannot hold
// ring positions: the error says so and what to do.
func ringAddress(ctx context.Context, h host.Host, listen, announce string, timeout time.Duration) (string, string, error) {
	if announce != "" {
		if err := ring.CheckAddr(announce); err != nil {
			return "", "", fmt.Errorf("--announce: %w", err)
		}
		return announce, ReachAnnounced, nil
	}
	if !listensUnspecified(listen) {
		if err := ring.CheckAddr(listen); err == nil {
			if ap := netip.MustParseAddrPort(listen); ap.Port() != 0 {
				return listen, ReachListen, nil
			}
		}
		return "", "", nil // port 0: the caller takes the bound address
	}
	sub, err := h.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated))
	if err != nil {
		return "", "", fmt.Errorf("ring address: %w", err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if addr, how, ok := publicAddr(h); ok {
			return addr, how, nil
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("%w after %s listening on %s: the router offers no UPnP IGD or NAT-PMP port mapping. "+
				"Forward a TCP port to this machine and run with --announce PUBLIC_IP:PORT", errNoPublicAddr, timeout, listen)
		case <-sub.Out():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// publicAddr returns the first public IPv4 TCP address among h's addresses
// and whether it is one h listens on itself or one a router maps to it.
func publicAddr(h host.Host) (string, string, bool) {
	listening := map[string]bool{}
	if las, err := h.Network().InterfaceListenAddresses(); err == nil {
		for _, a := range las {
			listening[a.String()] = true
		}
	}
	for _, a := range h.Addrs() {
		if !manet.IsPublicAddr(a) {
			continue
		}
		ap, ok := tcp4(a)
		if !ok {
			continue
		}
		how := ReachMapped
		if listening[a.String()] {
			how = ReachListen
		}
		return ap.String(), how, true
	}
	return "", "", false
}

// tcp4 extracts ip:port from /ip4/IP/tcp/PORT (nothing after).
func tcp4(a ma.Multiaddr) (netip.AddrPort, bool) {
	ip, err := a.ValueForProtocol(ma.P_IP4)
	if err != nil {
		return netip.AddrPort{}, false
	}
	port, err := a.ValueForProtocol(ma.P_TCP)
	if err != nil || len(a) != 2 {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(ip + ":" + port)
	return ap, err == nil
}

// addrCheckEvery is how often a node behind a mapping compares its router's
// public address with its ring address, besides on every change of the
// host's addresses (libp2p refreshes the router's external address every
// 15 s).
const addrCheckEvery = 10 * time.Second

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
	sub, err := n.host.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated))
	if err != nil {
		n.log.Warn("cannot watch the public address", "err", err)
		return
	}
	defer sub.Close()
	tick := time.NewTicker(addrCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Out():
		case <-tick.C:
		}
		addr, how, ok := publicAddr(n.host)
		if !ok || how != ReachMapped || addr == n.self.Addr {
			continue
		}
		if old, _ := netip.ParseAddrPort(n.self.Addr); hasAddr(n.host, old) {
			continue // the old mapping still stands: another mapping was added
		}
		n.log.Warn("the router's public address changed: this node's ring ids derive from the old one", "old", n.self.Addr, "new", addr)
		n.addrChanged <- addr // buffered, sent once
		return
	}
}

// hasAddr reports whether ap is still among h's addresses.
func hasAddr(h host.Host, ap netip.AddrPort) bool {
	for _, a := range h.Addrs() {
		if got, ok := tcp4(a); ok && got == ap {
			return true
		}
	}
	return false
}

// Members returns the multiaddrs of the ring members this node knows (its
// virtual servers' successors and predecessors), for joining again.
func (n *Node) Members() []string {
	seen := map[string]bool{n.self.Peer: true}
	var out []string
	for _, v := range n.ring.Status().Vnodes {
		nodes := append([]ring.Node{}, v.Successors...)
		if v.Predecessor != nil {
			nodes = append(nodes, *v.Predecessor)
		}
		for _, m := range nodes {
			if seen[m.Peer] {
				continue
			}
			seen[m.Peer] = true
			ai, err := addrInfo(m.Contact)
			if err != nil {
				continue
			}
			if addrs, err := peer.AddrInfoToP2pAddrs(&ai); err == nil && len(addrs) > 0 {
				out = append(out, addrs[0].String())
			}
		}
	}
	return out
}
