package member

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/p2phost"
	"github.com/herod-archive/herod/ring"
)

// The trust boundary. Any libp2p peer can open a stream to a node; only a
// ring member may make it act. Gate.Member is the one place that decides
// who is a member: every protocol handler of the node calls it first and
// refuses the stream (ErrNotMember, counted in Stats.NotMember) when it
// fails. Each handler then checks the member's role for what it asks
// (docs/trust.md, "Who may ask what").
//
// A member is a peer whose virtual server v
//
//  1. passes the ring's own admission check, ring.Ring.Admit: v's id is
//     VirtualID(address, index) and the address, dialled directly,
//     authenticates as the stream's peer (whatever "verified" comes to
//     mean, say for nodes behind NAT, this gate follows it); and
//  2. is in the ring: v is in this node's routing state (predecessor,
//     successors, fingers: the ring admitted it there), or a lookup of v's
//     id by this node's ring finds v itself.
//
// A peer outside this node's routing state is asked, over the ring
// protocol, for one of its virtual servers (a lookup step names the
// answering one). Answers are cached per peer: a member for memberTTL, a
// refusal for notMemberTTL, but one that rests on this node's view of the
// ring (a lookup that found another node, or failed) for notPlacedTTL
// only: while a ring forms, views lag by a stabilization round or two,
// and a twin about to move keeps the node's other virtual servers.

// ErrNotMember is the refusal of a stream from a peer that is not a
// verified ring member.
var ErrNotMember = errors.New("node: not a ring member")

// errNotPlaced marks a refusal that rests on this node's view of the
// ring, which may be behind: cached for notPlacedTTL.
var errNotPlaced = errors.New("not placed in the ring by this node's view")

// A member's request outside the role the ring gives it (a pull for a
// range it does not own, replica links for a range this node does not
// replicate, a robots.txt this node does not own) is refused by the
// package that serves it, with an error wrapping that package's ErrRole,
// and reported to Gate.RefuseRole.

const (
	memberTTL     = time.Minute
	notMemberTTL  = 10 * time.Second
	notPlacedTTL  = 2 * time.Second
	memberTimeout = 10 * time.Second
	// maxMemberCache bounds the cached answers; a full cache is cleared
	// (a flood of identities costs checks, not memory).
	maxMemberCache = 4096
)

// memberCache remembers recent membership answers per peer id.
type memberCache struct {
	mu sync.Mutex
	m  map[peer.ID]memberEntry
}

type memberEntry struct {
	node  ring.Node
	err   error
	until time.Time
}

func (c *memberCache) get(p peer.ID, now time.Time) (memberEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[p]
	if !ok || !now.Before(e.until) {
		return memberEntry{}, false
	}
	return e, true
}

func (c *memberCache) put(p peer.ID, e memberEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxMemberCache {
		c.m = make(map[peer.ID]memberEntry)
	}
	c.m[p] = e
}

// forget drops the cached answer for p.
func (c *memberCache) forget(p peer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, p)
}

// Ring is what a Gate needs of the ring; *ring.Ring implements it.
type Ring interface {
	// Status returns this node's routing state.
	Status() ring.Status
	// Admit runs the ring's admission check on v: its id derives from
	// its address and index, and the address authenticates as its peer.
	Admit(ctx context.Context, v ring.Node) error
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
}

// Gate decides which peers are ring members and counts the refusals.
// Every field but Logger must be set; the cache needs no set-up.
type Gate struct {
	Self string // this node's peer id: never a member of its own ring
	Ring Ring
	// Call sends one ring-protocol message to c and returns the reply
	// (ring/p2p's Transport.Call).
	Call func(ctx context.Context, c ring.Contact, m *ring.Message) (*ring.Message, error)
	// Addrs returns the addresses peer p announced (the host's
	// peerstore).
	Addrs func(p peer.ID) []ma.Multiaddr
	// Refuses reports whether the archive refuses peer's captures (a
	// purged peer is no member).
	Refuses func(peer string) bool
	Logger  *slog.Logger // nil: discard

	cache           memberCache
	notMember, role atomic.Int64
}

// Stats counts requests refused at the trust boundary.
type Stats struct {
	NotMember int64 // peers refused because they are no verified ring member
	Role      int64 // members' requests outside their role
}

// Stats returns the refusal counters.
func (g *Gate) Stats() Stats { return Stats{NotMember: g.notMember.Load(), Role: g.role.Load()} }

// Forget drops the cached answer for peer p (its captures were purged).
func (g *Gate) Forget(p peer.ID) { g.cache.forget(p) }

func (g *Gate) log() *slog.Logger {
	if g.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Logger
}

// Member returns the ring virtual server through which the peer of s is
// a verified member of this node's ring, or an error wrapping
// ErrNotMember. It is the gate every protocol handler passes first.
func (g *Gate) Member(s network.Stream) (ring.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), memberTimeout)
	defer cancel()
	return g.memberPeer(ctx, s.Conn().RemotePeer(), s.Conn().RemoteMultiaddr())
}

// memberPeer is Member for peer p reached at remote.
func (g *Gate) memberPeer(ctx context.Context, p peer.ID, remote ma.Multiaddr) (ring.Node, error) {
	now := time.Now()
	if e, ok := g.cache.get(p, now); ok {
		return e.node, e.err
	}
	v, err := g.checkMember(ctx, p, remote)
	if err != nil {
		if ctx.Err() != nil {
			return ring.Node{}, err // not the peer's fault: not cached
		}
		ttl := notMemberTTL
		if errors.Is(err, errNotPlaced) {
			ttl = notPlacedTTL
		}
		err = fmt.Errorf("%w: %s: %w", ErrNotMember, p, err)
		g.cache.put(p, memberEntry{err: err, until: now.Add(ttl)})
		g.notMember.Add(1)
		g.log().Debug("refused a peer that is not a ring member", "peer", p, "err", err)
		return ring.Node{}, err
	}
	g.cache.put(p, memberEntry{node: v, until: now.Add(memberTTL)})
	return v, nil
}

// checkMember decides, without the cache, whether p is a member.
func (g *Gate) checkMember(ctx context.Context, p peer.ID, remote ma.Multiaddr) (ring.Node, error) {
	ps := p.String()
	if ps == g.Self {
		return ring.Node{}, errors.New("this node's own identity")
	}
	if g.Refuses(ps) {
		return ring.Node{}, errors.New("purged: its captures are refused")
	}
	if v, ok := g.knownVnode(ps); ok {
		if err := g.Ring.Admit(ctx, v); err != nil {
			return ring.Node{}, err
		}
		return v, nil
	}
	c, ok := p2phost.RelayContactOf(remote, ps)
	if !ok {
		addr, found := contactAddr(remote, g.Addrs(p))
		if !found {
			return ring.Node{}, fmt.Errorf("no ip:port for %s", remote)
		}
		c = ring.Contact{Peer: ps, Addr: addr}
	}
	rep, err := g.Call(ctx, c, &ring.Message{Op: ring.OpStep})
	if err != nil {
		return ring.Node{}, fmt.Errorf("ask for a virtual server: %w", err)
	}
	if rep.Err != "" || rep.From == nil || rep.From.Peer != ps {
		return ring.Node{}, fmt.Errorf("no virtual server of its own named (err %q)", rep.Err)
	}
	v := *rep.From
	if err := g.Ring.Admit(ctx, v); err != nil {
		return ring.Node{}, err
	}
	owner, err := g.Ring.Lookup(ctx, v.ID)
	if err != nil {
		return ring.Node{}, fmt.Errorf("look up %s: %w: %w", v, errNotPlaced, err)
	}
	if owner.ID != v.ID || owner.Contact != v.Contact {
		return ring.Node{}, fmt.Errorf("%s is not in the ring (its id is owned by %s): %w", v, owner, errNotPlaced)
	}
	return v, nil
}

// knownVnode returns a virtual server of peer p from this node's routing
// state: its virtual servers' predecessors, successors and fingers.
func (g *Gate) knownVnode(p string) (ring.Node, bool) {
	for _, v := range g.Ring.Status().Vnodes {
		if v.Predecessor != nil && v.Predecessor.Peer == p {
			return *v.Predecessor, true
		}
		for _, s := range v.Successors {
			if s.Peer == p {
				return s, true
			}
		}
		for _, f := range v.Fingers {
			if f.Node.Peer == p {
				return f.Node, true
			}
		}
	}
	return ring.Node{}, false
}

// contactAddr returns an ip:port to name a peer by on the ring protocol:
// the connection's remote TCP address, or else a TCP address the peer
// announced. (Which address is the peer's own is what Admit checks; this
// one only routes the question over the existing connection.)
func contactAddr(remote ma.Multiaddr, announced []ma.Multiaddr) (string, bool) {
	for _, a := range append([]ma.Multiaddr{remote}, announced...) {
		if a == nil {
			continue
		}
		na, err := manet.ToNetAddr(a)
		if err != nil || na.Network() != "tcp" {
			continue
		}
		ap, err := netip.ParseAddrPort(na.String())
		if err != nil || !ap.Addr().Is4() {
			continue
		}
		return ap.String(), true
	}
	return "", false
}

// Gate is Member for a handler: a stream from a peer that is not a
// member is reset, and false returned.
func (g *Gate) Gate(s network.Stream) (ring.Node, bool) {
	m, err := g.Member(s)
	if err != nil {
		s.Reset()
		return ring.Node{}, false
	}
	return m, true
}

// Admit is Gate for handlers that need no member: it reports whether s
// comes from one (else s is reset).
func (g *Gate) Admit(s network.Stream) bool {
	_, ok := g.Gate(s)
	return ok
}

// RefuseRole counts and logs a member's request outside its role.
func (g *Gate) RefuseRole(m ring.Node, proto string, err error) {
	g.role.Add(1)
	g.log().Info("refused a member's request outside its role", "protocol", proto, "member", m.String(), "err", err)
}
