package p2phost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// Relay service limits. A member that others can dial relays for members
// that nobody can (unless --no-relay-service). Ring traffic — lookups,
// links, replication — runs over the relayed connections, so a circuit
// has no time or byte cut (libp2p's default, 2 minutes and 128 KiB, is
// meant for hole-punch coordination only); what bounds a relay is the
// number of reservations and circuits, and the relayed members' own
// bandwidth.
const (
	relayReservations      = 64
	relayReservationsPerIP = 8
	relayCircuits          = 16
	relayReservationTTL    = time.Hour
)

// relayCheckEvery is how often a relayed node checks its reservation and
// its public IP.
const relayCheckEvery = 30 * time.Second

// StartRelayService makes h a circuit relay for ring members behind
// routers that map no port; closing the result stops it. libp2p's own
// relay manager starts a relay only once AutoNAT v1 reports public
// reachability, which needs AutoNAT v1 servers herod does not run; the
// node knows better: its ring address was given, listened on or mapped,
// and members verify it by dialing it.
func StartRelayService(h host.Host) (io.Closer, error) {
	res := relayv2.DefaultResources()
	res.Limit = nil
	res.MaxReservations = relayReservations
	res.MaxReservationsPerIP = relayReservationsPerIP
	res.MaxCircuits = relayCircuits
	res.ReservationTTL = relayReservationTTL
	r, err := relayv2.New(h, relayv2.WithResources(res))
	if err != nil {
		return nil, fmt.Errorf("node: relay service: %w", err)
	}
	return r, nil
}

// Observer asks member c which IP it sees this host's connection come
// from; ring/p2p's Transport.Observe implements it.
type Observer func(ctx context.Context, c ring.Contact) (netip.Addr, error)

// RelayedAddress makes h, which listens on listen and nobody can dial,
// reachable through a member: for each join member (an address as given
// to --join) in turn it asks which IP the member sees this host's
// connection come from (the router's public IP) and reserves a relay
// slot on it. It returns the ring address — that IP with the listen
// port, which is nominal: ids hash the IP only — the relay's multiaddr and
// the reservation.
func RelayedAddress(ctx context.Context, h host.Host, listen string, join []string, observe Observer) (string, string, *client.Reservation, error) {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", "", nil, fmt.Errorf("listen %q: %w", listen, err)
	}
	var errs []error
	for _, j := range join {
		c, err := ParseContact(j)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.Relay != "" {
			continue // a relayed member can neither observe nor relay
		}
		ip, err := observe(ctx, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ai, err := p2p.AddrInfo(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rsvp, err := client.Reserve(ctx, h, ai)
		if err != nil {
			errs = append(errs, fmt.Errorf("relay reservation on %s: %w", c, err))
			continue
		}
		relay, err := relayAddr(ai)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.ConnManager().Protect(ai.ID, "herod-relay")
		return netip.AddrPortFrom(ip, mustPort(port)).String(), relay, rsvp, nil
	}
	if len(errs) == 0 {
		return "", "", nil, errors.New("no member to relay through: give --join")
	}
	return "", "", nil, fmt.Errorf("no member observed this node and relays for it: %w", errors.Join(errs...))
}

// relayAddr returns the relay's first address with its peer id.
func relayAddr(ai peer.AddrInfo) (string, error) {
	addrs, err := peer.AddrInfoToP2pAddrs(&ai)
	if err != nil || len(addrs) == 0 {
		return "", fmt.Errorf("relay %s: no address", ai.ID)
	}
	return addrs[0].String(), nil
}

// mustPort parses a port already checked by the host's listen.
func mustPort(s string) uint16 {
	ap, err := netip.ParseAddrPort("0.0.0.0:" + s)
	if err != nil {
		return 0
	}
	return ap.Port()
}

// KeepRelayed keeps a relayed node, h at contact self, reachable until
// ctx ends: it renews its reservation rsvp before it expires and whenever
// the connection to the relay drops, and asks the relay which IP it sees
// this node at. When the reservation cannot be renewed, or the public IP
// changed (a home connection's IP changes overnight), it sends the
// address to join at on changed, once, and returns: the node's owner
// joins again, through another relay or at the new IP.
func KeepRelayed(ctx context.Context, h host.Host, self ring.Contact, rsvp *client.Reservation, observe Observer, log *slog.Logger, changed chan<- string) {
	relay, err := ma.NewMultiaddr(self.Relay)
	if err != nil {
		return
	}
	ai, err := peer.AddrInfoFromP2pAddr(relay)
	if err != nil {
		return
	}
	relayContact, err := ParseContact(self.Relay)
	if err != nil {
		return
	}
	expires := rsvp.Expiration
	tick := time.NewTicker(relayCheckEvery)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		renew := time.Until(expires) < relayReservationTTL/4 || h.Network().Connectedness(ai.ID) != network.Connected
		ok := true
		if renew {
			rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			r, err := client.Reserve(rctx, h, *ai)
			cancel()
			if err != nil {
				log.Warn("relay reservation not renewed", "relay", ai.ID, "err", err)
				ok = false
			} else {
				expires = r.Expiration
			}
		}
		if ok {
			octx, cancel := context.WithTimeout(ctx, 15*time.Second)
			ip, err := observe(octx, relayContact)
			cancel()
			if err == nil {
				if old, perr := netip.ParseAddrPort(self.Addr); perr == nil && ip != old.Addr() {
					log.Warn("the public IP changed: this node's ring ids derive from the old one", "old", old.Addr(), "new", ip)
					changed <- netip.AddrPortFrom(ip, old.Port()).String()
					return
				}
			} else {
				ok = false
			}
		}
		if ok {
			failures = 0
			continue
		}
		if failures++; failures >= 3 {
			log.Warn("the relay no longer serves this node: joining again", "relay", ai.ID)
			changed <- self.Addr
			return
		}
	}
}

// RelayContactOf returns the contact of a member reached through a relay
// from a circuit multiaddr .../p2p/RELAY/p2p-circuit[/p2p/PEER]; pid names
// the peer when the address does not (a relayed connection's remote
// address ends at p2p-circuit).
func RelayContactOf(m ma.Multiaddr, pid string) (ring.Contact, bool) {
	relay, rest := ma.SplitFunc(m, func(c ma.Component) bool { return c.Protocol().Code == ma.P_CIRCUIT })
	if len(rest) == 0 {
		return ring.Contact{}, false
	}
	if p, err := rest.ValueForProtocol(ma.P_P2P); err == nil {
		pid = p
	}
	if pid == "" {
		return ring.Contact{}, false
	}
	rc, err := ParseContact(relay.String())
	if err != nil {
		return ring.Contact{}, false
	}
	// Addr is the relay's: a contact parsed from a circuit address is
	// dialed through Relay only, and its own address is learned when it
	// answers (its virtual servers carry it).
	return ring.Contact{Peer: pid, Addr: rc.Addr, Relay: relay.String()}, true
}
