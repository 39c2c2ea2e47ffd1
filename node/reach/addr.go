package reach

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

// How a node is reached at its ring address.
const (
	// Listen: the node listens on its ring address itself (a public
	// interface address, or a LAN or loopback ring).
	Listen = "listen"
	// Mapped: the node listens on a private address behind a router that
	// mapped a public port to it by UPnP IGD or NAT-PMP, found by libp2p's
	// port mapping; the ring address is the router's public IP and the
	// mapped port.
	Mapped = "mapped"
	// Announced: the operator gave the ring address (--announce), for a
	// port forwarded by hand.
	Announced = "announced"
	// Relayed: the node's router maps no port (no UPnP IGD or NAT-PMP, or
	// a symmetric NAT) and none was forwarded by hand, so nobody can dial
	// it. It is a full member all the same: its ids derive from the public
	// IP a member observes on its outbound connection, and the ring
	// reaches it through a circuit relay on a public member
	// (ring.Contact.Relay), or directly once hole punching (DCUtR) or its
	// own outbound connections open a path (package p2phost).
	Relayed = "relayed"
)

// DefaultTimeout bounds how long a node listening on an unspecified
// address waits for its router to map a public port.
const DefaultTimeout = 30 * time.Second

// ErrNoPublicAddr reports that a node behind NAT found no public address.
var ErrNoPublicAddr = errors.New("reach: no public address")

// ListensUnspecified reports whether the listen address is 0.0.0.0 or ::.
func ListensUnspecified(listen string) bool {
	ap, err := netip.ParseAddrPort(listen)
	return err == nil && ap.Addr().IsUnspecified()
}

// WantsPortMap reports whether the node should ask its router for a port
// mapping: it listens on all interfaces or on a private (RFC 1918, ULA)
// address. A node on loopback or on a public address does not: asking
// would only send discovery traffic to whatever gateway the machine has.
func WantsPortMap(listen string) bool {
	ap, err := netip.ParseAddrPort(listen)
	if err != nil {
		return false
	}
	return ap.Addr().IsUnspecified() || ap.Addr().IsPrivate()
}

// RingAddress returns the address the node's virtual-server ids derive
// from, and how it is reached:
//
//   - the announced address, when the operator gives one (Announced);
//   - the listen address, when it is a concrete IP and port (Listen); ""
//     when its port is 0: the caller takes the bound address;
//   - otherwise (0.0.0.0 or ::) the first public IPv4 TCP address h has
//     within timeout: an interface's own public address (Listen), or the
//     router's public IP and the port it mapped (Mapped).
//
// A node that finds none cannot be reached by the ring and cannot hold
// ring positions: the error wraps ErrNoPublicAddr and says what to do.
func RingAddress(ctx context.Context, h host.Host, listen, announce string, timeout time.Duration) (string, string, error) {
	if announce != "" {
		if err := ring.CheckAddr(announce); err != nil {
			return "", "", fmt.Errorf("--announce: %w", err)
		}
		return announce, Announced, nil
	}
	if !ListensUnspecified(listen) {
		if err := ring.CheckAddr(listen); err == nil {
			if ap := netip.MustParseAddrPort(listen); ap.Port() != 0 {
				return listen, Listen, nil
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
		if addr, how, ok := PublicAddr(h); ok {
			return addr, how, nil
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("%w after %s listening on %s: the router offers no UPnP IGD or NAT-PMP port mapping. "+
				"Forward a TCP port to this machine and run with --announce PUBLIC_IP:PORT", ErrNoPublicAddr, timeout, listen)
		case <-sub.Out():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// PublicAddr returns the first public IPv4 TCP address among h's
// addresses and whether h listens on it itself (Listen) or a router maps
// it to h (Mapped).
func PublicAddr(h host.Host) (string, string, bool) {
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
		ap, ok := TCP4(a)
		if !ok {
			continue
		}
		how := Mapped
		if listening[a.String()] {
			how = Listen
		}
		return ap.String(), how, true
	}
	return "", "", false
}

// TCP4 extracts ip:port from /ip4/IP/tcp/PORT (nothing after).
func TCP4(a ma.Multiaddr) (netip.AddrPort, bool) {
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

// HasAddr reports whether ap is among h's addresses.
func HasAddr(h host.Host, ap netip.AddrPort) bool {
	for _, a := range h.Addrs() {
		if got, ok := TCP4(a); ok && got == ap {
			return true
		}
	}
	return false
}
