package crawl

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// HostBudget paces requests to each host. The crawler calls Wait before
// every request it sends to a host, robots.txt included.
//
// The default is a LocalBudget: HostRate requests per second per host from
// this node. A ring-wide budget, where the aggregate of all nodes crawling a
// host stays within one rate, is a HostBudget the node supplies: either a
// SharedBudget (each node takes an equal share of the rate, which needs only
// an estimate of the number of nodes), or one that leases tokens from the
// node that owns the host.
type HostBudget interface {
	// Wait blocks until one more request to host may be sent, or until ctx
	// is done (then it returns ctx's error). minInterval is the host's
	// robots.txt Crawl-delay (0 when none): requests must also be at least
	// that far apart. host is a canonical URL host ("example.org",
	// "127.0.0.1:8080"). Wait is safe for concurrent use.
	Wait(ctx context.Context, host string, minInterval time.Duration) error
}

// LocalBudget is a HostBudget that lets this node send at most Rate
// requests per second to each host, with bursts of one request; a
// Crawl-delay longer than 1/Rate lowers the rate for that host.
type LocalBudget struct {
	rate  float64
	share func() int
	clock func() time.Time

	mu    sync.Mutex
	hosts map[string]*hostLimiter
}

type hostLimiter struct {
	lim  *rate.Limiter
	used time.Time // by the clock, for eviction
	last time.Time // real time of the last granted request
}

var _ HostBudget = (*LocalBudget)(nil)

// maxIdleLimiters bounds the per-host limiter table: beyond it, limiters
// unused for limiterIdle are dropped (a dropped limiter starts full again,
// which is harmless after that much idle time).
const (
	maxIdleLimiters = 4096
	limiterIdle     = time.Minute
)

// NewLocalBudget returns a LocalBudget of perHost requests per second per
// host (DefaultHostRate when perHost <= 0). clock may be nil (time.Now); it
// is used only to age out idle hosts: pacing uses real time.
func NewLocalBudget(perHost float64, clock func() time.Time) *LocalBudget {
	return NewSharedBudget(perHost, nil, clock)
}

// NewSharedBudget returns a budget for one node of a ring whose nodes
// together may send at most perHost requests per second to each host. Each
// node paces itself at perHost/nodes() (a host's Crawl-delay d at one
// request per d*nodes()), so the aggregate stays within perHost (and d) as
// long as every node uses the same perHost and nodes() does not
// underestimate the number of crawling nodes (real nodes, not virtual
// servers: each runs one crawler). nodes may be nil (one node). Every node
// may send its first request to a host at once, so the aggregate can burst
// to nodes() requests at the start; by time t after the start at most
// nodes() + perHost*t requests have been sent.
func NewSharedBudget(perHost float64, nodes func() int, clock func() time.Time) *LocalBudget {
	if perHost <= 0 || math.IsNaN(perHost) {
		perHost = DefaultHostRate
	}
	if clock == nil {
		clock = time.Now
	}
	return &LocalBudget{rate: perHost, share: nodes, clock: clock, hosts: make(map[string]*hostLimiter)}
}

// Limit returns this node's current rate for a host with the given
// Crawl-delay: Rate, lowered to 1/minInterval, divided by the share (the
// number of nodes). A Crawl-delay is the site's wish for the whole crawler,
// so the ring as a whole honours it, not each node.
func (b *LocalBudget) Limit(minInterval time.Duration) rate.Limit {
	r := b.rate
	if minInterval > 0 {
		r = min(r, 1/minInterval.Seconds())
	}
	if b.share != nil {
		if n := b.share(); n > 1 {
			r /= float64(n)
		}
	}
	return rate.Limit(r)
}

// Wait implements HostBudget.
func (b *LocalBudget) Wait(ctx context.Context, host string, minInterval time.Duration) error {
	h := b.limiter(host, b.Limit(minInterval))
	if err := h.lim.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("crawl budget %s: %w", host, err)
	}
	b.mu.Lock()
	h.last = time.Now()
	b.mu.Unlock()
	return nil
}

// limiter returns the limiter of host at rate l. When the rate changes (a
// Crawl-delay became known, the ring grew) the limiter is replaced by one
// whose last request is the old one's, so the new spacing applies from
// that request on rather than after a fresh burst.
func (b *LocalBudget) limiter(host string, l rate.Limit) *hostLimiter {
	now := b.clock()
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.hosts[host]
	if !ok {
		if len(b.hosts) >= maxIdleLimiters {
			for k, v := range b.hosts {
				if now.Sub(v.used) > limiterIdle {
					delete(b.hosts, k)
				}
			}
		}
		h = &hostLimiter{lim: rate.NewLimiter(l, 1)}
		b.hosts[host] = h
	} else if h.lim.Limit() != l {
		h.lim = rate.NewLimiter(l, 1)
		if !h.last.IsZero() {
			h.lim.ReserveN(h.last, 1)
		}
	}
	h.used = now
	return h
}

// CapBudget returns a HostBudget that waits for b, then for a LocalBudget
// of perHost requests per second per host (DefaultHostRate when perHost <=
// 0; a Crawl-delay lowers it as in LocalBudget). Whatever b grants, this
// node then never sends a host more than perHost requests per second, nor
// two requests closer than the Crawl-delay: a ring-wide budget whose owner
// lies (grants every slot at once) can make this node go no faster than it
// would crawl the host alone. The local wait comes after b's, so that two
// requests are spaced by the cap however b's grants fall. Honest grants to
// one node are already at least 1/perHost apart, so the cap delays them
// only when the previous one was used late (by the lateness, which a
// leased slot's grace bounds to half an interval). clock is as in
// NewLocalBudget.
func CapBudget(b HostBudget, perHost float64, clock func() time.Time) HostBudget {
	if b == nil {
		return NewLocalBudget(perHost, clock)
	}
	if lb, ok := b.(*LocalBudget); ok && lb.share == nil && lb.rate <= perHost {
		return lb // already at most perHost from this node
	}
	return &cappedBudget{grant: b, cap: NewLocalBudget(perHost, clock)}
}

// cappedBudget is CapBudget's budget.
type cappedBudget struct {
	grant HostBudget
	cap   *LocalBudget
	held  atomic.Int64 // grants the cap held back (capHeld)
}

// capHeldMin is the least hold by the cap that counts as one: timer
// jitter between honest grants stays well under it.
const capHeldMin = 10 * time.Millisecond

// Wait implements HostBudget.
func (b *cappedBudget) Wait(ctx context.Context, host string, minInterval time.Duration) error {
	if err := b.grant.Wait(ctx, host, minInterval); err != nil {
		return err
	}
	granted := time.Now()
	err := b.cap.Wait(ctx, host, minInterval)
	if time.Since(granted) >= capHeldMin {
		b.held.Add(1)
	}
	return err
}

// capHeld returns how many grants of budget's ring-wide part the local
// cap held back for capHeldMin or more (Stats.CapHeld). It is 0 for a
// budget that is not capped.
func capHeld(budget HostBudget) int64 {
	if b, ok := budget.(*cappedBudget); ok {
		return b.held.Load()
	}
	return 0
}
