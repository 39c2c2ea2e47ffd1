package p2p

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Protocol is the libp2p protocol id of the ring.
const Protocol = protocol.ID("/herod/ring/1.0.0")

// Limits.
const (
	// MaxFrame bounds one request or reply.
	MaxFrame = 256 << 10
	// DefaultTimeout bounds a call or a served request without a deadline.
	DefaultTimeout = 10 * time.Second
	// protectTag is the connection manager tag for ring neighbours.
	protectTag = "herod-ring"
	// addrTTL is how long a dialed contact's address stays in the peerstore.
	addrTTL = 30 * time.Minute
)

// ErrNoAddr reports a host without an IPv4 TCP listen address.
var ErrNoAddr = errors.New("p2p: no ipv4 tcp listen address")

// Transport carries ring messages over a libp2p host.
type Transport struct {
	h   host.Host
	log *slog.Logger

	mu        sync.Mutex
	handler   ring.Handler
	protected map[peer.ID]bool
	self      string // the ring address this host answers at, when set by SetSelf
	dialed    dialbacks

	calls, relayedCalls atomic.Uint64
}

var (
	_ ring.Transport         = (*Transport)(nil)
	_ ring.NeighborProtector = (*Transport)(nil)
)

// New returns a transport on h. It registers no handler until Handle.
func New(h host.Host, log *slog.Logger) *Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Transport{h: h, log: log, protected: make(map[peer.ID]bool)}
	h.SetStreamHandler(ObserveProtocol, t.serveObserve)
	h.SetStreamHandler(DialbackProtocol, t.serveDialback)
	return t
}

// CallStats returns how many ring calls this transport made and how many
// of them ran over a relayed connection.
func (t *Transport) CallStats() (calls, relayed uint64) {
	return t.calls.Load(), t.relayedCalls.Load()
}

// SetSelf records the ring address ("ip:port") this host answers at when
// it is not one it listens on: the public address a router maps to it
// (UPnP IGD or NAT-PMP) or the one its operator announces. Verify of this
// host's own contact accepts that address instead of ContactOf's.
func (t *Transport) SetSelf(addr string) {
	t.mu.Lock()
	t.self = addr
	t.mu.Unlock()
}

// ContactOf returns h's ring contact: its peer id and its first IPv4 TCP
// listen address as "ip:port". A specific listen IP is preferred; with an
// unspecified listener (0.0.0.0) the first IPv4 TCP address the host
// advertises is used.
func ContactOf(h host.Host) (ring.Contact, error) {
	for _, list := range [][]ma.Multiaddr{h.Network().ListenAddresses(), h.Addrs()} {
		for _, a := range list {
			ap, ok := tcp4(a)
			if ok && !ap.Addr().IsUnspecified() {
				return ring.Contact{Peer: h.ID().String(), Addr: ap.String()}, nil
			}
		}
	}
	return ring.Contact{}, ErrNoAddr
}

// tcp4 extracts ip:port from /ip4/IP/tcp/PORT (nothing after).
func tcp4(a ma.Multiaddr) (netip.AddrPort, bool) {
	if len(a) != 2 || a[0].Protocol().Code != ma.P_IP4 || a[1].Protocol().Code != ma.P_TCP {
		return netip.AddrPort{}, false
	}
	ip, err := netip.ParseAddr(a[0].Value())
	if err != nil {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(a[1].Value(), 10, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, uint16(port)), true
}

// multiaddr converts an "ip:port" contact address to /ip4|ip6/IP/tcp/PORT.
func multiaddr(addr string) (ma.Multiaddr, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("p2p: address %q: %w", addr, err)
	}
	proto := "ip4"
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		proto = "ip6"
	}
	return ma.NewMultiaddr("/" + proto + "/" + ap.Addr().Unmap().String() + "/tcp/" + strconv.Itoa(int(ap.Port())))
}

func target(c ring.Contact) (peer.ID, ma.Multiaddr, error) {
	ai, err := AddrInfo(c)
	if err != nil {
		return "", nil, err
	}
	return ai.ID, ai.Addrs[0], nil
}

// Handle installs h as the handler of incoming ring streams; nil removes it.
func (t *Transport) Handle(h ring.Handler) {
	t.mu.Lock()
	t.handler = h
	t.mu.Unlock()
	if h == nil {
		t.h.RemoveStreamHandler(Protocol)
		return
	}
	t.h.SetStreamHandler(Protocol, t.serve)
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(DefaultTimeout)
}

// Call sends m to c over a new stream and returns the reply.
func (t *Transport) Call(ctx context.Context, c ring.Contact, m *ring.Message) (*ring.Message, error) {
	pid, a, err := target(c)
	if err != nil {
		return nil, err
	}
	if pid == t.h.ID() {
		return nil, fmt.Errorf("p2p call: to self: %w", ring.ErrUnreachable)
	}
	t.h.Peerstore().AddAddr(pid, a, addrTTL)
	s, err := t.h.NewStream(ctx, pid, Protocol)
	if err != nil {
		return nil, fmt.Errorf("p2p call %s: %w: %w", c, ring.ErrUnreachable, err)
	}
	defer s.Close()
	t.calls.Add(1)
	if IsRelayed(s.Conn()) {
		t.relayedCalls.Add(1)
	}
	if err := s.SetDeadline(deadline(ctx)); err != nil {
		s.Reset()
		return nil, fmt.Errorf("p2p call %s: %w", c, err)
	}
	if err := wire.WriteJSON(s, m); err != nil {
		s.Reset()
		return nil, fmt.Errorf("p2p call %s: %w", c, err)
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return nil, fmt.Errorf("p2p call %s: %w", c, err)
	}
	reply, err := readMessage(bufio.NewReader(s))
	if err != nil {
		s.Reset()
		return nil, fmt.Errorf("p2p call %s: %w", c, err)
	}
	return reply, nil
}

// readMessage reads one framed ring message of at most MaxFrame bytes.
func readMessage(r *bufio.Reader) (*ring.Message, error) {
	var m ring.Message
	if err := wire.ReadJSON(r, MaxFrame, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// serve answers one incoming stream.
func (t *Transport) serve(s network.Stream) {
	defer s.Close()
	t.mu.Lock()
	h := t.handler
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	if h == nil || s.SetDeadline(deadline(ctx)) != nil {
		s.Reset()
		return
	}
	m, err := readMessage(bufio.NewReader(s))
	if err != nil {
		t.log.Debug("p2p: bad ring request", "peer", s.Conn().RemotePeer(), "err", err)
		s.Reset()
		return
	}
	reply := h(ctx, s.Conn().RemotePeer().String(), m)
	if err := wire.WriteJSON(s, reply); err != nil {
		t.log.Debug("p2p: ring reply", "peer", s.Conn().RemotePeer(), "err", err)
		s.Reset()
	}
}

// Verify dials c.Addr directly on a fresh connection that must
// authenticate as c.Peer, then closes it.
func (t *Transport) Verify(ctx context.Context, c ring.Contact) error {
	pid, a, err := target(c)
	if err != nil {
		return fmt.Errorf("p2p verify: %w: %w", ring.ErrBadPeer, err)
	}
	if pid == t.h.ID() {
		t.mu.Lock()
		self := t.self
		t.mu.Unlock()
		if self == "" {
			if own, err := ContactOf(t.h); err == nil {
				self = own.Addr
			}
		}
		if self == c.Addr {
			return nil
		}
		return fmt.Errorf("p2p verify %s: %w: not our address", c, ring.ErrBadPeer)
	}
	if t.sameIP(c.Addr) {
		// A node claiming this host's own public IP is behind the same
		// router, which may not loop a mapped port back to its LAN.
		return t.verifyNeighbour(ctx, pid, c)
	}
	if c.Relay != "" {
		return t.verifyRelayed(ctx, pid, c)
	}
	sw, ok := t.h.Network().(*swarm.Swarm)
	if !ok {
		return t.verifyByConnect(ctx, pid, a, c)
	}
	tpt := sw.TransportForDialing(a)
	if tpt == nil {
		return fmt.Errorf("p2p verify %s: no transport for %s: %w", c, a, ring.ErrUnreachable)
	}
	conn, err := tpt.Dial(ctx, a, pid)
	if err != nil {
		return classify(c, err)
	}
	if got := conn.RemotePeer(); got != pid {
		conn.Close()
		return fmt.Errorf("p2p verify %s: answered as %s: %w", c, got, ring.ErrBadPeer)
	}
	conn.Close()
	return nil
}

// sameIP reports whether addr has the IP of this host's ring address
// (SetSelf) while this host does not listen on that IP itself: the two are
// behind one router.
func (t *Transport) sameIP(addr string) bool {
	t.mu.Lock()
	self := t.self
	t.mu.Unlock()
	a, err1 := netip.ParseAddrPort(addr)
	s, err2 := netip.ParseAddrPort(self)
	if err1 != nil || err2 != nil || a.Addr() != s.Addr() {
		return false
	}
	for _, la := range t.h.Network().ListenAddresses() {
		if ip, err := manet.ToIP(la); err == nil && ip.Equal(s.Addr().AsSlice()) {
			return false // this host listens on the IP: dialing it works
		}
	}
	return true
}

// verifyNeighbour verifies a node that claims this host's own public IP:
// it must be reachable, authenticated as c.Peer, at a private or loopback
// address, that is on this host's own network behind the router that owns
// the IP. A node elsewhere cannot be reached there, so it cannot claim the
// IP of a household it is not in.
func (t *Transport) verifyNeighbour(ctx context.Context, pid peer.ID, c ring.Contact) error {
	if err := t.h.Connect(ctx, peer.AddrInfo{ID: pid}); err != nil {
		return fmt.Errorf("p2p verify %s: behind this node's router but not found on its network: %w: %w", c, ring.ErrBadPeer, err)
	}
	for _, conn := range t.h.Network().ConnsToPeer(pid) {
		ip, err := manet.ToIP(conn.RemoteMultiaddr())
		if err != nil {
			continue
		}
		if a, ok := netip.AddrFromSlice(ip); ok && (a.Unmap().IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast()) {
			return nil
		}
	}
	return fmt.Errorf("p2p verify %s: claims this node's public IP but is not reached on its network: %w", c, ring.ErrBadPeer)
}

// verifyByConnect is Verify for hosts whose network is not a swarm: it
// connects with only the claimed address and requires a connection whose
// remote address is exactly it.
func (t *Transport) verifyByConnect(ctx context.Context, pid peer.ID, a ma.Multiaddr, c ring.Contact) error {
	if err := t.h.Connect(ctx, peer.AddrInfo{ID: pid, Addrs: []ma.Multiaddr{a}}); err != nil {
		return classify(c, err)
	}
	for _, conn := range t.h.Network().ConnsToPeer(pid) {
		if conn.RemoteMultiaddr().Equal(a) {
			return nil
		}
	}
	return fmt.Errorf("p2p verify %s: no connection at the claimed address: %w", c, ring.ErrBadPeer)
}

// classify maps a dial error: a connection that reached someone else is
// a lie (ErrBadPeer); anything else is unreachability.
func classify(c ring.Contact, err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("p2p verify %s: %w: %w", c, ring.ErrUnreachable, err)
	}
	return fmt.Errorf("p2p verify %s: %w: %w", c, ring.ErrBadPeer, err)
}

// ProtectNeighbors protects connections to exactly these peers from the
// connection manager's trimming, unprotecting former neighbours.
func (t *Transport) ProtectNeighbors(peers []string) {
	want := make(map[peer.ID]bool, len(peers))
	for _, p := range peers {
		if pid, err := peer.Decode(p); err == nil {
			want[pid] = true
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cm := t.h.ConnManager()
	for pid := range t.protected {
		if !want[pid] {
			cm.Unprotect(pid, protectTag)
			delete(t.protected, pid)
		}
	}
	for pid := range want {
		if !t.protected[pid] {
			cm.Protect(pid, protectTag)
			t.protected[pid] = true
		}
	}
}

// Protected reports whether the transport currently protects peer p.
func (t *Transport) Protected(p string) bool {
	pid, err := peer.Decode(p)
	if err != nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.protected[pid] && t.h.ConnManager().IsProtected(pid, protectTag)
}
