package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
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
