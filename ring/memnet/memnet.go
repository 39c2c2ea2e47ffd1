package memnet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/herod-archive/herod/ring"
)

// Config configures a Network. Zero values mean the defaults.
type Config struct {
	// Seed seeds message loss decisions.
	Seed uint64
	// Latency is the default one-way latency between endpoints (default 0).
	Latency time.Duration
	// CallTimeout: a call whose round trip exceeds it fails (default 1s).
	CallTimeout time.Duration
}

// Stats counts what the network carried.
type Stats struct {
	Calls       uint64        // calls attempted
	Delivered   uint64        // calls that reached a handler
	Dropped     uint64        // lost to the loss rate
	Unreachable uint64        // dead, absent or partitioned destinations
	TimedOut    uint64        // round trip above the call timeout
	Latency     time.Duration // total simulated round-trip time delivered
}

// Network is a simulated network of ring nodes.
type Network struct {
	mu     sync.Mutex
	cfg    Config
	rng    *rand.Rand
	byAddr map[string]*endpoint
	loss   float64
	links  map[[2]string]time.Duration
	group  map[string]int
	stats  Stats
}

type endpoint struct {
	c    ring.Contact
	h    ring.Handler
	dead bool
}

// New returns an empty network.
func New(cfg Config) *Network {
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = time.Second
	}
	return &Network{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		byAddr: make(map[string]*endpoint),
		links:  make(map[[2]string]time.Duration),
	}
}

// Transport registers an endpoint listening at c.Addr that authenticates
// as c.Peer, replacing any previous endpoint there, and returns its
// transport.
func (n *Network) Transport(c ring.Contact) *Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	ep := &endpoint{c: c}
	n.byAddr[c.Addr] = ep
	return &Transport{net: n, ep: ep}
}

// SetLoss sets the probability in [0,1] that a call is lost.
func (n *Network) SetLoss(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loss = p
}

// SetLatency sets the one-way latency between addresses a and b (both
// directions); d < 0 restores the default.
func (n *Network) SetLatency(a, b string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d < 0 {
		delete(n.links, [2]string{a, b})
		delete(n.links, [2]string{b, a})
		return
	}
	n.links[[2]string{a, b}] = d
	n.links[[2]string{b, a}] = d
}

// Partition splits the network: endpoints in different groups cannot
// reach each other. Addresses not listed form one more group together.
func (n *Network) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.group = make(map[string]int)
	for i, g := range groups {
		for _, a := range g {
			n.group[a] = i + 1
		}
	}
}

// Heal removes any partition.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.group = nil
}

// Kill makes the endpoint at addr dead: it neither sends nor answers.
func (n *Network) Kill(addr string) { n.setDead(addr, true) }

// Revive undoes Kill.
func (n *Network) Revive(addr string) { n.setDead(addr, false) }

func (n *Network) setDead(addr string, dead bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep := n.byAddr[addr]; ep != nil {
		ep.dead = dead
	}
}

// Alive reports whether an endpoint is registered at addr and not dead.
func (n *Network) Alive(addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	ep := n.byAddr[addr]
	return ep != nil && !ep.dead
}

// Stats returns the counters so far.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// route decides the fate of one call from src to addr. Caller holds mu.
func (n *Network) route(src *endpoint, addr string, lossy bool) (*endpoint, error) {
	n.stats.Calls++
	dst := n.byAddr[addr]
	switch {
	case src.dead:
		n.stats.Unreachable++
		return nil, fmt.Errorf("memnet: sender %s is dead: %w", src.c.Addr, ring.ErrUnreachable)
	case dst == nil || dst.dead || dst.h == nil:
		n.stats.Unreachable++
		return nil, fmt.Errorf("memnet: %s: %w", addr, ring.ErrUnreachable)
	case n.group != nil && n.group[src.c.Addr] != n.group[addr]:
		n.stats.Unreachable++
		return nil, fmt.Errorf("memnet: %s partitioned: %w", addr, ring.ErrUnreachable)
	}
	if lossy && n.loss > 0 && n.rng.Float64() < n.loss {
		n.stats.Dropped++
		return nil, fmt.Errorf("memnet: %s: message lost: %w", addr, context.DeadlineExceeded)
	}
	lat, ok := n.links[[2]string{src.c.Addr, addr}]
	if !ok {
		lat = n.cfg.Latency
	}
	if 2*lat > n.cfg.CallTimeout {
		n.stats.TimedOut++
		return nil, fmt.Errorf("memnet: %s: round trip %v: %w", addr, 2*lat, context.DeadlineExceeded)
	}
	n.stats.Latency += 2 * lat
	return dst, nil
}

// Transport is one endpoint's ring.Transport.
type Transport struct {
	net *Network
	ep  *endpoint
}

var _ ring.Transport = (*Transport)(nil)

// Contact returns the endpoint's real contact.
func (t *Transport) Contact() ring.Contact { return t.ep.c }

// Handle installs the endpoint's handler.
func (t *Transport) Handle(h ring.Handler) {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	t.ep.h = h
}

// Call delivers m to the endpoint at to.Addr, which must authenticate as
// to.Peer, and returns a copy of its reply.
func (t *Transport) Call(ctx context.Context, to ring.Contact, m *ring.Message) (*ring.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.net.mu.Lock()
	dst, err := t.net.route(t.ep, to.Addr, true)
	if err == nil && dst.c.Peer != to.Peer {
		err = fmt.Errorf("memnet: %s answers as %s, not %s: %w", to.Addr, dst.c.Peer, to.Peer, ring.ErrBadPeer)
	}
	var h ring.Handler
	if err == nil {
		t.net.stats.Delivered++
		h = dst.h
	}
	t.net.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return clone(h(ctx, t.ep.c.Peer, clone(m))), nil
}

// Verify checks that the endpoint at c.Addr is reachable from this one
// and authenticates as c.Peer.
func (t *Transport) Verify(ctx context.Context, c ring.Contact) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	dst, err := t.net.route(t.ep, c.Addr, false)
	if err != nil {
		return err
	}
	if dst.c.Peer != c.Peer {
		return fmt.Errorf("memnet: %s answers as %s, not %s: %w", c.Addr, dst.c.Peer, c.Peer, ring.ErrBadPeer)
	}
	return nil
}

func clone(m *ring.Message) *ring.Message {
	if m == nil {
		return nil
	}
	c := *m
	if m.From != nil {
		f := *m.From
		c.From = &f
	}
	if m.Pred != nil {
		p := *m.Pred
		c.Pred = &p
	}
	c.Nodes = append([]ring.Node(nil), m.Nodes...)
	c.Owners = append([]ring.Node(nil), m.Owners...)
	return &c
}
