package node

import (
	"context"
	"log/slog"
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Politeness across the ring.
//
// A host must see the ring as one polite crawler, not as N of them. Two
// things are shared, each kept by the node that owns a key on the ring:
//
//   - robots.txt: the node owning the canonical URL origin+"/robots.txt"
//     fetches the file (through its crawler's own cache, RobotsTTL, 24 h by
//     default) and the other nodes ask it over robotsProtocol. In a stable
//     ring each host's robots.txt is fetched once per RobotsTTL ring-wide.
//     When the owner cannot be reached the asking node fetches the file
//     itself through the same crawler cache, so the fallback costs at most
//     one fetch of a file per node per RobotsTTL (a failed fetch, 5xx or
//     unreachable, is retried after RobotsTTL/24 as the crawler does for
//     every file). RFC 9309 would let us treat an unreachable owner like an
//     unreachable site (disallow everything); we fetch instead because the
//     owner being down says nothing about the site, and the per-node cache
//     bounds what that costs the site.
//   - the per-host request budget: the node owning hostKey(host) =
//     SHA-1("host:" + host) keeps one schedule of request slots for the
//     host: a grid of ticks 1/HostRate apart, or a Crawl-delay apart when
//     longer, each tick granted to one node at most (see slotAllocator).
//     Crawling nodes lease slots in batches over budgetProtocol (see
//     leaseBudget): a lease asks for up to k slots (k adapts to how many
//     got used, and covers about leaseSpan), spaced at the asking node's
//     own pace so that ticks it could not use go to other nodes, and the
//     owner replies with delays relative to its now. A node sends each
//     request in one of its slots; a slot not used within half an interval
//     expires (nothing is returned to the owner). When the owner cannot be
//     reached a node paces the host with crawl.NewSharedBudget for
//     fallbackFor, using twice its estimate of the ring's size
//     (nodeEstimate), so that nodes in fallback take less than their share.
//
// Bound: in a stable ring, with every node using the same HostRate r, the
// requests of all nodes to one host in any window of length W number at
// most r·W + 1 + r·(g + D): g is the grace of a slot (half an interval,
// at least minSlotGrace) and D the largest delay between a slot and its
// request reaching the host (the lease is placed after its reply arrives,
// so the round trip only delays; the crawler's dispatch after Wait adds
// to D). Aligned windows of whole intervals hold at most r·W + 1 + r·D.
// TestPoliteRing checks r·W + 3 at r = 20/s (D up to 100 ms).

// hostKey returns the ring key of a host's request schedule.
func hostKey(host string) id.ID { return id.OfString("host:" + host) }

// ownerTTL is how long a looked-up owner is trusted before a new lookup.
const ownerTTL = 10 * time.Second

// politeness is a node's share of ring-wide politeness: it is the
// crawler's RobotsSource and HostBudget, the owner-side slot allocator and
// the protocol handlers. It is safe for concurrent use.
type politeness struct {
	n      *Node
	rate   float64
	log    *slog.Logger
	alloc  *slotAllocator
	budget *leaseBudget

	mu     sync.Mutex
	owners map[id.ID]ownerEntry

	c politeCounters
}

type ownerEntry struct {
	c       ring.Contact
	expires time.Time
}

type politeCounters struct {
	leaseRPCs, leaseLocal, lookups                     atomic.Int64
	robotsAsked, robotsLocal, robotsFallback, badPeers atomic.Int64
	robotsServed, leasesServed, robotsNotOwned         atomic.Int64
}

var (
	_ crawl.RobotsSource = (*politeness)(nil)
	_ crawl.HostBudget   = (*politeness)(nil)
)

// setupPoliteness makes the crawler's robots.txt and per-host pacing hold
// for the ring as a whole (see the comment at the top of this file). A
// Budget or Robots already set in cc is kept. The protocol handlers are
// registered here; they read n.crawler only once the node has started.
func (n *Node) setupPoliteness(cc *crawl.Config) {
	rate := cc.HostRate
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		rate = crawl.DefaultHostRate
	}
	p := &politeness{
		n:      n,
		rate:   rate,
		log:    n.log.With("sub", "politeness"),
		alloc:  newSlotAllocator(time.Now),
		owners: make(map[id.ID]ownerEntry),
	}
	p.budget = newLeaseBudget(rate, p.lease, crawl.NewSharedBudget(rate, p.nodeEstimate, nil), p.log)
	if cc.Budget == nil {
		cc.Budget = p
	}
	if cc.Robots == nil {
		cc.Robots = p
	}
	// Record the effective hooks so PolitenessStats can find them.
	n.cfg.Crawl.Budget, n.cfg.Crawl.Robots = cc.Budget, cc.Robots
	n.host.SetStreamHandler(budgetProtocol, p.handleBudget)
	n.host.SetStreamHandler(robotsProtocol, p.handleRobots)
}

// Wait implements crawl.HostBudget with the ring-wide leased schedule.
func (p *politeness) Wait(ctx context.Context, host string, minInterval time.Duration) error {
	return p.budget.Wait(ctx, host, minInterval)
}

// ownInterval is the spacing this node enforces for the hosts it owns,
// whatever a requester asks.
func (p *politeness) ownInterval() time.Duration {
	return time.Duration(float64(time.Second) / p.rate)
}

// owner returns the real node owning key, from a short-lived cache unless
// fresh is set. self reports that it is this node.
func (p *politeness) owner(ctx context.Context, key id.ID, fresh bool) (c ring.Contact, self bool, err error) {
	if p.n.ring.Owns(key) {
		return p.n.self, true, nil
	}
	now := time.Now()
	if !fresh {
		p.mu.Lock()
		e, ok := p.owners[key]
		p.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.c, e.c.Peer == p.n.self.Peer, nil
		}
	}
	p.c.lookups.Add(1)
	o, err := p.n.ring.Lookup(ctx, key)
	if err != nil {
		return ring.Contact{}, false, err
	}
	p.mu.Lock()
	if len(p.owners) >= maxLeaseHosts {
		for k, e := range p.owners {
			if now.After(e.expires) {
				delete(p.owners, k)
			}
		}
	}
	p.owners[key] = ownerEntry{c: o.Contact, expires: now.Add(ownerTTL)}
	p.mu.Unlock()
	return o.Contact, o.Peer == p.n.self.Peer, nil
}

// forgetOwner drops a cached owner that failed or disowned key.
func (p *politeness) forgetOwner(key id.ID) {
	p.mu.Lock()
	delete(p.owners, key)
	p.mu.Unlock()
}

// nodeEstimate is the fallback budget's ring size: twice the larger of
// the real nodes this node knows of and the size implied by the share of
// the key space its virtual servers own. Overestimating only slows the
// fallback; underestimating would let it exceed the host's budget.
func (p *politeness) nodeEstimate() int {
	st := p.n.ring.Status()
	peers := map[string]bool{st.Self.Peer: true}
	owned := new(big.Int)
	for _, v := range st.Vnodes {
		if v.Predecessor != nil {
			peers[v.Predecessor.Peer] = true
		}
		for _, s := range v.Successors {
			peers[s.Peer] = true
		}
		for _, f := range v.Fingers {
			peers[f.Node.Peer] = true
		}
		if v.Range.Known {
			owned.Add(owned, id.Distance(v.Range.Start, v.Range.End))
		}
	}
	est := len(peers)
	if owned.Sign() > 0 {
		space := new(big.Float).SetInt(new(big.Int).Lsh(big.NewInt(1), 160))
		ratio, _ := new(big.Float).Quo(space, new(big.Float).SetInt(owned)).Float64()
		if ratio < 1<<20 {
			est = max(est, int(math.Ceil(ratio)))
		}
	}
	return 2 * est
}

// PolitenessStats is a snapshot of a node's part in ring-wide politeness.
type PolitenessStats struct {
	LeaseStats
	// LeaseRPCs counts lease requests sent to other nodes, LeaseLocal
	// those this node answered itself as the host's owner, OwnerLookups
	// the ring lookups made to find owners.
	LeaseRPCs, LeaseLocal, OwnerLookups int64
	// LeasesServed counts lease requests answered for other nodes.
	LeasesServed int64
	// RobotsAsked counts robots.txt records asked of other nodes,
	// RobotsLocal those taken from this node's own cache as their owner,
	// RobotsFallback those fetched locally because the owner failed,
	// RobotsServed those answered for other nodes, RobotsNotOwned the
	// requests refused because the origin's robots.txt key is not this
	// node's to fetch.
	RobotsAsked, RobotsLocal, RobotsFallback, RobotsServed, RobotsNotOwned int64
	// BadPeerFrames counts malformed politeness requests from peers.
	BadPeerFrames int64
	// ScheduledHosts is how many host schedules this node keeps as owner.
	ScheduledHosts int
}

// PolitenessStats returns the node's politeness counters. They are zero
// when the node was configured with its own crawl Budget and Robots.
func (n *Node) PolitenessStats() PolitenessStats {
	p, ok := n.cfg.Crawl.Robots.(*politeness)
	if !ok {
		if p, ok = n.cfg.Crawl.Budget.(*politeness); !ok {
			return PolitenessStats{}
		}
	}
	return PolitenessStats{
		LeaseStats:     p.budget.snapshot(),
		LeaseRPCs:      p.c.leaseRPCs.Load(),
		LeaseLocal:     p.c.leaseLocal.Load(),
		OwnerLookups:   p.c.lookups.Load(),
		LeasesServed:   p.c.leasesServed.Load(),
		RobotsAsked:    p.c.robotsAsked.Load(),
		RobotsLocal:    p.c.robotsLocal.Load(),
		RobotsFallback: p.c.robotsFallback.Load(),
		RobotsServed:   p.c.robotsServed.Load(),
		RobotsNotOwned: p.c.robotsNotOwned.Load(),
		BadPeerFrames:  p.c.badPeers.Load(),
		ScheduledHosts: p.alloc.scheduled(),
	}
}
