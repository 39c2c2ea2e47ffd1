package p2p

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"golang.org/x/time/rate"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Volunteers behind routers that map no port are ring members reached
// through a circuit relay (ring.Contact.Relay). Their outbound connections
// still work, and the IP a member sees on such a connection is the
// router's public IP, which the TCP or QUIC handshake and Noise's
// authentication bind to the peer id: that observation, not a dial to the
// claimed address, is what verifies a relayed contact.
//
// Two small protocols serve it:
//
//   - ObserveProtocol: a node asks a member which IP it sees the node's
//     direct connection come from; the node derives its ids from the answer
//     (each verifier then checks it on its own connection).
//   - DialbackProtocol: a verifier without a direct connection from the
//     relayed node asks it, over the relay, to dial the verifier directly;
//     the verifier then reads the IP of that connection.
const (
	ObserveProtocol  = protocol.ID("/herod/observe/1.0.0")
	DialbackProtocol = protocol.ID("/herod/dialback/1.0.0")
)

// dialbackEvery bounds how often a node dials back one requester: a peer
// cannot make it dial in a loop.
const dialbackEvery = 5 * time.Second

// dialbacksPerSecond bounds the dial-backs of all requesters together.
const dialbacksPerSecond = 10

// observed is the reply of ObserveProtocol and DialbackProtocol.
type observed struct {
	IP  string `json:"ip,omitempty"`
	Err string `json:"err,omitempty"`
}

// errNoPublic is the dial-back refusal of a node asked by a requester
// that has no public address.
const errNoPublic = "no public address to dial back"

// ErrRelayed reports a request that needs a direct connection and came
// over a relay.
var ErrRelayed = errors.New("p2p: connection is relayed")

// AddrInfo returns the libp2p address of the real node behind c: its
// ip:port as a TCP multiaddr or, for a relayed contact, the circuit
// through c.Relay.
func AddrInfo(c ring.Contact) (peer.AddrInfo, error) {
	pid, err := peer.Decode(c.Peer)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("p2p: peer id %q: %w", c.Peer, err)
	}
	if c.Relay != "" {
		a, err := circuit(c.Relay, pid)
		if err != nil {
			return peer.AddrInfo{}, err
		}
		return peer.AddrInfo{ID: pid, Addrs: []ma.Multiaddr{a}}, nil
	}
	a, err := multiaddr(c.Addr)
	if err != nil {
		return peer.AddrInfo{}, err
	}
	return peer.AddrInfo{ID: pid, Addrs: []ma.Multiaddr{a}}, nil
}

// circuit returns relay/p2p-circuit/p2p/pid; relay must name its peer.
func circuit(relay string, pid peer.ID) (ma.Multiaddr, error) {
	r, err := ma.NewMultiaddr(relay)
	if err != nil {
		return nil, fmt.Errorf("p2p: relay %q: %w", relay, err)
	}
	if _, err := r.ValueForProtocol(ma.P_P2P); err != nil {
		return nil, fmt.Errorf("p2p: relay %q names no peer", relay)
	}
	if _, err := r.ValueForProtocol(ma.P_CIRCUIT); err == nil {
		return nil, fmt.Errorf("p2p: relay %q is itself a circuit", relay)
	}
	tail, err := ma.NewMultiaddr("/p2p-circuit/p2p/" + pid.String())
	if err != nil {
		return nil, fmt.Errorf("p2p: circuit to %s: %w", pid, err)
	}
	return r.Encapsulate(tail), nil
}

// IsRelayed reports whether a connection runs over a circuit relay.
func IsRelayed(c network.Conn) bool {
	_, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// directIP returns the remote IP of a direct connection.
func directIP(c network.Conn) (netip.Addr, bool) {
	if IsRelayed(c) {
		return netip.Addr{}, false
	}
	ip, err := manet.ToIP(c.RemoteMultiaddr())
	if err != nil {
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}

// observeRequest asks ObserveProtocol about a peer other than the asker.
type observeRequest struct {
	Peer string `json:"peer,omitempty"`
}

// serveObserve answers ObserveProtocol with the IP the asker's direct
// connection comes from or, when the request names a peer, the IP of that
// peer's direct connection with this host.
func (t *Transport) serveObserve(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(DefaultTimeout))
	var q observeRequest
	if err := wire.ReadJSON(bufio.NewReader(s), 1<<10, &q); err != nil {
		s.Reset()
		return
	}
	var rep observed
	if q.Peer == "" {
		if ip, ok := directIP(s.Conn()); ok {
			rep.IP = ip.String()
		} else {
			rep.Err = ErrRelayed.Error()
		}
	} else if p, err := peer.Decode(q.Peer); err != nil {
		rep.Err = "bad peer id"
	} else {
		rep.Err = "no direct connection from " + p.String()
		for _, c := range t.h.Network().ConnsToPeer(p) {
			if ip, ok := directIP(c); ok {
				rep.IP, rep.Err = ip.String(), ""
				break
			}
		}
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// Observe asks the member behind c which IP it sees this host's direct
// connection come from: the public IP of the router this host is behind.
func (t *Transport) Observe(ctx context.Context, c ring.Contact) (netip.Addr, error) {
	return t.observe(ctx, c, "")
}

// observe asks c for the IP of about's direct connection with it (this
// host's own when about is empty).
func (t *Transport) observe(ctx context.Context, c ring.Contact, about string) (netip.Addr, error) {
	ai, err := AddrInfo(c)
	if err != nil {
		return netip.Addr{}, err
	}
	if err := t.h.Connect(network.WithForceDirectDial(ctx, "observe"), ai); err != nil {
		return netip.Addr{}, fmt.Errorf("p2p observe %s: %w: %w", c, ring.ErrUnreachable, err)
	}
	s, err := t.h.NewStream(ctx, ai.ID, ObserveProtocol)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("p2p observe %s: %w", c, err)
	}
	defer s.Close()
	_ = s.SetDeadline(deadline(ctx))
	if err := wire.WriteJSON(s, observeRequest{Peer: about}); err != nil {
		s.Reset()
		return netip.Addr{}, fmt.Errorf("p2p observe %s: %w", c, err)
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return netip.Addr{}, fmt.Errorf("p2p observe %s: %w", c, err)
	}
	var rep observed
	if err := wire.ReadJSON(bufio.NewReader(s), 1<<10, &rep); err != nil {
		s.Reset()
		return netip.Addr{}, fmt.Errorf("p2p observe %s: %w", c, err)
	}
	if rep.Err != "" {
		return netip.Addr{}, fmt.Errorf("p2p observe %s: %s", c, rep.Err)
	}
	ip, err := netip.ParseAddr(rep.IP)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("p2p observe %s: bad reply %q", c, rep.IP)
	}
	return ip, nil
}

// dialbacks remembers when each requester was last dialed back, and how
// that went.
type dialbacks struct {
	mu   sync.Mutex
	last map[peer.ID]dialback
	all  *rate.Limiter // every requester together: peer ids are free to make
}

type dialback struct {
	at  time.Time
	err string
}

// do dials p back with dial, or returns the outcome of the dial-back of p
// less than dialbackEvery ago.
func (d *dialbacks) do(p peer.ID, now time.Time, dial func(peer.ID) error) string {
	d.mu.Lock()
	if d.last == nil || len(d.last) > 4096 {
		d.last = make(map[peer.ID]dialback)
	}
	if b, ok := d.last[p]; ok && now.Sub(b.at) < dialbackEvery {
		d.mu.Unlock()
		return b.err
	}
	if d.all == nil {
		d.all = rate.NewLimiter(dialbacksPerSecond, dialbacksPerSecond)
	}
	if !d.all.AllowN(now, 1) {
		d.mu.Unlock()
		return "dial-backs rate-limited"
	}
	d.mu.Unlock()
	var msg string
	if err := dial(p); err != nil {
		msg = err.Error()
	}
	d.mu.Lock()
	d.last[p] = dialback{at: now, err: msg}
	d.mu.Unlock()
	return msg
}

// serveDialback answers DialbackProtocol: it dials the requester directly,
// at the public addresses the requester announced (never at a private,
// loopback or link-local one a peer could use to make this node probe its
// own network), at most once per dialbackEvery per requester (a request
// within that time gets the last outcome).
func (t *Transport) serveDialback(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(DefaultTimeout))
	rep := observed{Err: t.dialed.do(s.Conn().RemotePeer(), time.Now(), t.dialPublic)}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// dialPublic opens a direct connection to p at its public addresses.
func (t *Transport) dialPublic(p peer.ID) error {
	for _, c := range t.h.Network().ConnsToPeer(p) {
		if !IsRelayed(c) {
			return nil
		}
	}
	var addrs []ma.Multiaddr
	for _, a := range t.h.Peerstore().Addrs(p) {
		if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err == nil {
			continue
		}
		if manet.IsPublicAddr(a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return errors.New(errNoPublic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	// A private peerstore copy: Connect would also try what the peerstore
	// holds for p, addresses this node must not dial for a peer.
	sw, ok := t.h.Network().(interface {
		DialPeer(context.Context, peer.ID) (network.Conn, error)
	})
	if !ok {
		return errors.New("network cannot dial")
	}
	ps := t.h.Peerstore()
	saved := ps.Addrs(p)
	ps.ClearAddrs(p)
	ps.AddAddrs(p, addrs, addrTTL)
	_, err := sw.DialPeer(network.WithForceDirectDial(ctx, "dialback"), p)
	ps.AddAddrs(p, saved, addrTTL)
	if err != nil {
		return fmt.Errorf("dial back: %w", err)
	}
	return nil
}

// hasDirectFrom reports whether this host has a direct connection from p
// whose remote IP is ip.
func (t *Transport) hasDirectFrom(p peer.ID, ip netip.Addr) (seen netip.Addr, match bool) {
	for _, c := range t.h.Network().ConnsToPeer(p) {
		if got, ok := directIP(c); ok {
			if got == ip {
				return got, true
			}
			seen = got
		}
	}
	return seen, false
}

// verifyRelayed verifies a relayed contact: the peer, reached through its
// relay if need be, must hold a direct connection with this host that
// comes from the claimed IP. Without one, it is asked to dial this host
// directly (DialbackProtocol). A direct connection from another IP is a
// lie (ErrBadPeer); no direct connection at all — this host is itself
// unreachable — leaves the contact unverified (ErrUnreachable).
func (t *Transport) verifyRelayed(ctx context.Context, pid peer.ID, c ring.Contact) error {
	claimed, err := netip.ParseAddrPort(c.Addr)
	if err != nil {
		return fmt.Errorf("p2p verify %s: %w: %w", c, ring.ErrBadPeer, err)
	}
	ip := claimed.Addr().Unmap()
	if _, ok := t.hasDirectFrom(pid, ip); ok {
		return nil
	}
	ai, err := AddrInfo(c)
	if err != nil {
		return fmt.Errorf("p2p verify %s: %w: %w", c, ring.ErrBadPeer, err)
	}
	t.h.Peerstore().AddAddrs(pid, ai.Addrs, addrTTL)
	s, err := t.h.NewStream(network.WithAllowLimitedConn(ctx, "dialback"), pid, DialbackProtocol)
	if err != nil {
		return fmt.Errorf("p2p verify %s: %w: %w", c, ring.ErrUnreachable, err)
	}
	defer s.Close()
	_ = s.SetDeadline(deadline(ctx))
	var rep observed
	if err := wire.ReadJSON(bufio.NewReader(s), 1<<10, &rep); err != nil {
		s.Reset()
		return fmt.Errorf("p2p verify %s: dial-back: %w: %w", c, ring.ErrUnreachable, err)
	}
	seen, ok := t.hasDirectFrom(pid, ip)
	switch {
	case ok:
		return nil
	case seen.IsValid():
		return fmt.Errorf("p2p verify %s: its direct connection comes from %s: %w", c, seen, ring.ErrBadPeer)
	case rep.Err == errNoPublic:
		// This host cannot be dialed either (both are relayed): ask the
		// contact's relay, a member reached directly, which IP the
		// contact's own connection to it comes from.
		return t.verifyByRelay(ctx, c, ip)
	case rep.Err != "":
		return fmt.Errorf("p2p verify %s: dial-back: %s: %w", c, rep.Err, ring.ErrUnreachable)
	default:
		return fmt.Errorf("p2p verify %s: no direct connection after dial-back: %w", c, ring.ErrUnreachable)
	}
}

// verifyByRelay verifies a relayed contact for a host that is itself
// relayed: the contact's relay, dialed directly and authenticated, says
// which IP the contact's direct connection to it comes from. It trusts
// the relay's word (docs/ring.md, "Home volunteers"): members that can be
// dialed never rely on it.
func (t *Transport) verifyByRelay(ctx context.Context, c ring.Contact, ip netip.Addr) error {
	m, err := ma.NewMultiaddr(c.Relay)
	if err != nil {
		return fmt.Errorf("p2p verify %s: %w: %w", c, ring.ErrBadPeer, err)
	}
	ai, err := peer.AddrInfoFromP2pAddr(m)
	if err != nil || len(ai.Addrs) == 0 {
		return fmt.Errorf("p2p verify %s: relay address: %w", c, ring.ErrBadPeer)
	}
	ap, ok := tcpOf(ai.Addrs[0])
	if !ok {
		return fmt.Errorf("p2p verify %s: relay address is not ip/tcp: %w", c, ring.ErrBadPeer)
	}
	got, err := t.observe(ctx, ring.Contact{Peer: ai.ID.String(), Addr: ap.String()}, c.Peer)
	if err != nil {
		return fmt.Errorf("p2p verify %s by its relay: %w: %w", c, ring.ErrUnreachable, err)
	}
	if got != ip {
		return fmt.Errorf("p2p verify %s: its relay sees it at %s: %w", c, got, ring.ErrBadPeer)
	}
	return nil
}

// tcpOf extracts ip:port from an /ip4|ip6/IP/tcp/PORT multiaddr prefix.
func tcpOf(a ma.Multiaddr) (netip.AddrPort, bool) {
	ip, err := manet.ToIP(a)
	if err != nil {
		return netip.AddrPort{}, false
	}
	port, err := a.ValueForProtocol(ma.P_TCP)
	if err != nil {
		return netip.AddrPort{}, false
	}
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(netip.AddrPortFrom(addr.Unmap(), 0).Addr().String() + ":" + port)
	return ap, err == nil
}
