package politeness

import (
	"bufio"
	"context"
	"log/slog"
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// HostKey returns the ring key of a host's request schedule.
func HostKey(host string) id.ID { return id.OfString("host:" + host) }

// ownerTTL is how long a looked-up owner is trusted before a new lookup.
// A cached owner that no longer owns the key answers so (errNotOwner,
// errRobotsNotOwned) and is forgotten at once, so the TTL only bounds
// how long a lookup's answer is reused, not how long a moved schedule is
// missed.
const ownerTTL = time.Minute

// Ring is what a Service needs of the node's ring.
type Ring interface {
	// Owns reports whether one of this node's virtual servers owns key.
	Owns(key id.ID) bool
	// Lookup returns the node owning key.
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
	// Successors returns key's owner and up to k-1 next nodes on other
	// real nodes (ring.Ring.Successors): the second holder of a robots.txt
	// record is the second of them.
	Successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error)
	// Disowned reports that c, returned as key's owner, said it is not:
	// the next lookups ask the ring instead of the local tables
	// (ring.Ring.Disowned).
	Disowned(key id.ID, c ring.Contact)
	// Status describes this node's virtual servers and what they know of
	// the ring (for the fallback's estimate of the ring's size).
	Status() ring.Status
}

// Peers carries the service's requests to ring members.
type Peers interface {
	// Exchange sends one request of protocol p to the node behind c and
	// reads its reply (kit.Exchanger): the node's kit.Pool.Exchange.
	Exchange(ctx context.Context, c ring.Contact, p protocol.ID, fn func(s network.Stream, r *bufio.Reader) error) error
}

// Config configures a Service. Ring, Peers and Local are required.
type Config struct {
	// Rate is each host's budget in requests per second, ring-wide;
	// zero, negative or not finite means crawl.DefaultHostRate.
	Rate  float64
	Self  ring.Contact // this node
	Ring  Ring
	Peers Peers
	// Local returns this node's own record of origin's robots.txt (its
	// crawler's cache, crawl.Crawler.RobotsRecord), which it fetches at
	// most once per RobotsTTL; an error while the node is not crawling.
	Local  func(ctx context.Context, origin string) (crawl.RobotsRecord, error)
	Logger *slog.Logger // nil discards
}

// Service is a node's share of ring-wide politeness: it is the crawler's
// RobotsSource and HostBudget, the owner-side slot allocator and the
// protocol handlers (ServeRobots, ServeBudget). It is safe for
// concurrent use.
type Service struct {
	self   ring.Contact
	ring   Ring
	peers  Peers
	local  func(ctx context.Context, origin string) (crawl.RobotsRecord, error)
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
	robotsConfirmed, robotsUnconfirmed, robotsDisagree atomic.Int64
}

var (
	_ crawl.RobotsSource = (*Service)(nil)
	_ crawl.HostBudget   = (*Service)(nil)
)

// New returns a Service for one node.
func New(cfg Config) *Service {
	rate := cfg.Rate
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		rate = crawl.DefaultHostRate
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Service{
		self:   cfg.Self,
		ring:   cfg.Ring,
		peers:  cfg.Peers,
		local:  cfg.Local,
		rate:   rate,
		log:    log,
		alloc:  newSlotAllocator(time.Now),
		owners: make(map[id.ID]ownerEntry),
	}
	p.budget = newLeaseBudget(rate, p.lease, crawl.NewSharedBudget(rate, p.nodeEstimate, nil), p.log)
	return p
}

// Wait implements crawl.HostBudget with the ring-wide leased schedule.
func (p *Service) Wait(ctx context.Context, host string, minInterval time.Duration) error {
	return p.budget.Wait(ctx, host, minInterval)
}

// ownInterval is the spacing this node enforces for the hosts it owns,
// whatever a requester asks.
func (p *Service) ownInterval() time.Duration {
	return time.Duration(float64(time.Second) / p.rate)
}

// owner returns the real node owning key, from a short-lived cache unless
// fresh is set. self reports that it is this node.
func (p *Service) owner(ctx context.Context, key id.ID, fresh bool) (c ring.Contact, self bool, err error) {
	if p.ring.Owns(key) {
		return p.self, true, nil
	}
	now := time.Now()
	if !fresh {
		p.mu.Lock()
		e, ok := p.owners[key]
		p.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.c, e.c.Peer == p.self.Peer, nil
		}
	}
	p.c.lookups.Add(1)
	o, err := p.ring.Lookup(ctx, key)
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
	return o.Contact, o.Peer == p.self.Peer, nil
}

// forgetOwner drops a cached owner that failed or disowned key.
func (p *Service) forgetOwner(key id.ID) {
	p.mu.Lock()
	delete(p.owners, key)
	p.mu.Unlock()
}

// nodeEstimate is the fallback budget's ring size: twice the larger of
// the real nodes this node knows of and the size implied by the share of
// the key space its virtual servers own. Overestimating only slows the
// fallback; underestimating would let it exceed the host's budget.
func (p *Service) nodeEstimate() int {
	st := p.ring.Status()
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

// Stats is a snapshot of a node's part in ring-wide politeness.
type Stats struct {
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
	// RobotsConfirmed counts owners' records that the second holder
	// confirmed; RobotsUnconfirmed those that it did not (no second
	// holder, a failure, or a disagreement: the node then fetched the
	// file itself); RobotsDisagree, of those, the records the two holders
	// disagreed on.
	RobotsConfirmed, RobotsUnconfirmed, RobotsDisagree int64
	// BadPeerFrames counts malformed politeness requests from peers.
	BadPeerFrames int64
	// ScheduledHosts is how many host schedules this node keeps as owner.
	ScheduledHosts int
}

// Stats returns the service's counters.
func (p *Service) Stats() Stats {
	return Stats{
		LeaseStats:        p.budget.snapshot(),
		LeaseRPCs:         p.c.leaseRPCs.Load(),
		LeaseLocal:        p.c.leaseLocal.Load(),
		OwnerLookups:      p.c.lookups.Load(),
		LeasesServed:      p.c.leasesServed.Load(),
		RobotsAsked:       p.c.robotsAsked.Load(),
		RobotsLocal:       p.c.robotsLocal.Load(),
		RobotsFallback:    p.c.robotsFallback.Load(),
		RobotsServed:      p.c.robotsServed.Load(),
		RobotsNotOwned:    p.c.robotsNotOwned.Load(),
		RobotsConfirmed:   p.c.robotsConfirmed.Load(),
		RobotsUnconfirmed: p.c.robotsUnconfirmed.Load(),
		RobotsDisagree:    p.c.robotsDisagree.Load(),
		BadPeerFrames:     p.c.badPeers.Load(),
		ScheduledHosts:    p.alloc.scheduled(),
	}
}
