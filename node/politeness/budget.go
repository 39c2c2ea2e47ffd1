package politeness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// BudgetProtocol leases request slots of a host's ring-wide schedule from
// the node that owns HostKey(host). One request, one reply, both JSON
// frames of at most maxBudgetFrame bytes.
const BudgetProtocol protocol.ID = "/herod/budget/1.0.0"

const (
	maxBudgetFrame = 4 << 10
	// maxLeaseInterval caps the spacing a requester may ask for (the
	// crawler caps Crawl-delay at a day too).
	maxLeaseInterval = 24 * time.Hour
)

// BudgetRequest asks for up to Slots slots of Host's schedule whose ticks
// are Interval apart (nanoseconds; the requester's 1/HostRate or the
// host's Crawl-delay), the slots at least Spacing apart (0: Interval).
type BudgetRequest struct {
	Host     string        `json:"host"`
	Slots    int           `json:"slots"`
	Interval time.Duration `json:"interval"`
	Spacing  time.Duration `json:"spacing,omitempty"`
}

// BudgetReply grants slots as delays from the owner's now (nanoseconds),
// or says when to come back, or that the recipient does not own the host.
type BudgetReply struct {
	Delays     []time.Duration `json:"delays,omitempty"`
	RetryAfter time.Duration   `json:"retryAfter,omitempty"`
	NotOwner   bool            `json:"notOwner,omitempty"`
	Error      string          `json:"error,omitempty"`
}

// streamTimeout bounds a lease request's stream.
const streamTimeout = 30 * time.Second

// Errors of leasing.
var (
	// errRemote reports an error the remote node returned.
	errRemote = errors.New("politeness: remote error")
	// errNotOwner reports that the asked node does not own the host.
	errNotOwner = errors.New("politeness: not the owner")
	// errNoOwner reports that no node admitted owning the host.
	errNoOwner = errors.New("politeness: no owner")
)

// validate checks a request from a peer.
func (r BudgetRequest) validate() error {
	switch {
	case r.Host == "" || len(r.Host) > canon.MaxLen:
		return fmt.Errorf("budget request: bad host length %d", len(r.Host))
	case r.Slots < 1 || r.Slots > maxLeaseSlots:
		return fmt.Errorf("budget request: slots %d not in [1, %d]", r.Slots, maxLeaseSlots)
	case r.Interval <= 0 || r.Interval > maxLeaseInterval:
		return fmt.Errorf("budget request: interval %s not in (0, %s]", r.Interval, maxLeaseInterval)
	case r.Spacing < 0 || r.Spacing > maxLeaseInterval:
		return fmt.Errorf("budget request: spacing %s not in [0, %s]", r.Spacing, maxLeaseInterval)
	}
	return nil
}

// validate checks a reply against the request it answers.
func (r BudgetReply) validate(req BudgetRequest) error {
	if len(r.Delays) > req.Slots {
		return fmt.Errorf("budget reply: %d slots for %d asked", len(r.Delays), req.Slots)
	}
	for i, d := range r.Delays {
		if d < 0 || d > maxScheduleAhead+maxLeaseInterval {
			return fmt.Errorf("budget reply: slot delay %s out of range", d)
		}
		if i > 0 && d < r.Delays[i-1] {
			return fmt.Errorf("budget reply: slots out of order")
		}
	}
	if r.RetryAfter < 0 || r.RetryAfter > maxLeaseInterval {
		return fmt.Errorf("budget reply: retry after %s out of range", r.RetryAfter)
	}
	return nil
}

// lease is the leaseFunc of the node's budget: it asks the owner of host,
// this node's allocator when it owns host. A cached owner that disowns
// the host is looked up afresh once.
func (p *Service) lease(ctx context.Context, host string, k int, iv, sp time.Duration) (slotGrant, error) {
	key := HostKey(host)
	req := BudgetRequest{
		Host: host, Slots: min(max(k, 1), maxLeaseSlots),
		Interval: min(iv, maxLeaseInterval), Spacing: min(sp, maxLeaseInterval),
	}
	for attempt := range 2 {
		c, self, err := p.owner(ctx, key, attempt > 0)
		if err != nil {
			return slotGrant{}, fmt.Errorf("lease %s: %w", host, err)
		}
		if self {
			p.c.leaseLocal.Add(1)
			return p.alloc.allocate(host, p.self.Peer, req.Slots, max(req.Interval, p.ownInterval()), req.Spacing), nil
		}
		p.c.leaseRPCs.Add(1)
		g, err := p.callBudget(ctx, c, req)
		if errors.Is(err, errNotOwner) {
			p.forgetOwner(key)
			p.ring.Disowned(key, c)
			continue
		}
		if err != nil {
			p.forgetOwner(key)
			return slotGrant{}, fmt.Errorf("lease %s: %w", host, err)
		}
		return g, nil
	}
	return slotGrant{}, fmt.Errorf("lease %s: %w", host, errNoOwner)
}

// callBudget sends one lease request to c.
func (p *Service) callBudget(ctx context.Context, c ring.Contact, req BudgetRequest) (slotGrant, error) {
	var rep BudgetReply
	err := p.peers.Exchange(ctx, c, BudgetProtocol, func(s network.Stream, r *bufio.Reader) error {
		if err := wire.WriteJSON(s, req); err != nil {
			return fmt.Errorf("budget request: %w", err)
		}
		if err := wire.ReadJSON(r, maxBudgetFrame, &rep); err != nil {
			return fmt.Errorf("budget reply: %w", err)
		}
		return nil
	})
	if err != nil {
		return slotGrant{}, err
	}
	switch {
	case rep.NotOwner:
		return slotGrant{}, errNotOwner
	case rep.Error != "":
		return slotGrant{}, fmt.Errorf("budget reply: %w: %s", errRemote, rep.Error)
	}
	if err := rep.validate(req); err != nil {
		p.c.badPeers.Add(1)
		return slotGrant{}, err
	}
	return slotGrant{Delays: rep.Delays, RetryAfter: rep.RetryAfter}, nil
}

// ServeBudget answers a lease request for a host this node owns.
func (p *Service) ServeBudget(_ context.Context, q *kit.Request) error {
	var req BudgetRequest
	if err := q.ReadJSON(maxBudgetFrame, &req); err != nil {
		p.c.badPeers.Add(1)
		return err
	}
	s := q.Stream()
	return q.Reply(p.answerBudget(req, requester(s.Conn().RemoteMultiaddr(), s.Conn().RemotePeer().String())))
}

// BudgetSpec declares the budget protocol to the node's kit: a session
// protocol (kit.Spec.Session), one lease request and its reply an
// exchange.
func (p *Service) BudgetSpec() kit.Spec {
	return kit.Spec{ID: BudgetProtocol, Handle: p.ServeBudget, MaxFrame: maxBudgetFrame,
		Deadline: streamTimeout, MaxActive: 256, Session: true}
}

// requester names whom a lease request from a peer at addr counts
// against in a host's fair share: the peer's IP address (its /64 for
// IPv6), so that the identities one machine runs share one share — ids
// derive from ip:port, and a machine can open many ports; the peer id when
// the address has no IP (a relayed connection).
func requester(addr ma.Multiaddr, peer string) string {
	ip, err := manet.ToIP(addr)
	if err != nil {
		return peer
	}
	if v4 := ip.To4(); v4 != nil {
		return "ip:" + v4.String()
	}
	return "ip6:" + ip.Mask(net.CIDRMask(64, 128)).String()
}

// answerBudget is ServeBudget's decision for a request from from (see
// requester), apart from the stream.
func (p *Service) answerBudget(req BudgetRequest, from string) BudgetReply {
	if err := req.validate(); err != nil {
		p.c.badPeers.Add(1)
		return BudgetReply{Error: err.Error()}
	}
	if !p.ring.Owns(HostKey(req.Host)) {
		return BudgetReply{NotOwner: true}
	}
	p.c.leasesServed.Add(1)
	g := p.alloc.allocate(req.Host, from, req.Slots, max(req.Interval, p.ownInterval()), req.Spacing)
	return BudgetReply{Delays: g.Delays, RetryAfter: g.RetryAfter}
}
