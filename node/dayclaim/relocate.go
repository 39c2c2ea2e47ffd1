package dayclaim

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// Relocator is the crawler's Forwarder: the node's forwarder, plus the
// fetch-time ownership check (crawl.Relocator). A URL queued while this
// node owned it is fetched only if the node still owns it; one whose
// range moved to another node (a node joined in front of one of ours)
// is passed on to its owner instead, so at most one node fetches it.
// Every field but Logger must be set before the crawler uses it.
type Relocator struct {
	*forward.Forwarder
	Ring interface {
		// OwnerVnode returns the local virtual server that owns key, if
		// one does by this node's view.
		OwnerVnode(key id.ID) (ring.Node, bool)
		// CloserOwner returns an owner of key closer than this node's
		// routing knows, if a local virtual server's view has one.
		CloserOwner(key id.ID) (ring.Node, bool)
		Lookup(ctx context.Context, key id.ID) (ring.Node, error)
	}
	Claims *claim.Claims
	Self   string       // this node's peer id
	Day    func() int64 // the day claims are made for
	// Replicas is the node's link replication (Config.LinkReplicas): above
	// 1 nothing moves.
	Replicas int
	// Confirms, if set, reports the URLs this node must fetch itself
	// whatever the day's claims say: those of records another member
	// handed off to it, held until its own fetch confirms their payload
	// (node/replication, Replicator.HoldsURL). Nil: the claims decide.
	Confirms func(url string) bool
	Logger   *slog.Logger // nil: discard

	via    passVia
	checks atomic.Int64 // fetch-time checks that asked the ring
}

// passVia remembers, between Moved and PassOn of one entry, the former
// owner that answered a claim with "elsewhere": the URL is passed on
// through it, whose view is ahead (a lookup from this node's own tables
// would find this node again, which has seen the URL today and would
// drop it).
type passVia struct {
	mu sync.Mutex
	to map[string]ring.Node
}

// maxPassVia bounds passVia: entries are taken at once by PassOn, so more
// than this means they were not, and every hint held is let go (a URL
// without one is passed on by a lookup).
const maxPassVia = 1024

func (p *passVia) put(url string, n ring.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.to == nil || len(p.to) >= maxPassVia {
		p.to = make(map[string]ring.Node)
	}
	p.to[url] = n
}

func (p *passVia) take(url string) (ring.Node, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.to[url]
	delete(p.to, url)
	return n, ok
}

var _ crawl.Relocator = (*Relocator)(nil)

// OwnerChecks returns how many fetch-time checks asked the ring (the
// URL's owner was not a local virtual server by this node's view).
func (r *Relocator) OwnerChecks() int64 { return r.checks.Load() }

func (r *Relocator) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// Moved reports whether another node owns url now. When a local virtual
// server owns the key by this node's view (the common case) it costs a
// map-free range test under the ring's lock; otherwise it asks the ring:
// a closer owner known to a local virtual server, or a lookup. A failed
// lookup counts as not moved: the URL is fetched here rather than lost.
// With LinkReplicas > 1 nothing moves: replica links are queued on
// purpose at nodes that do not own them, to be crawled there too.
//
// A URL a local virtual server owns is also checked against the day's
// claims: one that a newer owner claimed, or that a former
// owner fetched today, counts as moved, and PassOn drops it — unless
// Confirms names it, when a former owner's fetch does not count.
func (r *Relocator) Moved(ctx context.Context, url string) bool {
	key := id.OfString(url)
	if r.Replicas > 1 {
		return false
	}
	if v, ok := r.Ring.OwnerVnode(key); ok {
		return r.toFetch(ctx, url, key, v)
	}
	r.checks.Add(1)
	owner, ok := r.Ring.CloserOwner(key)
	if !ok {
		var err error
		if owner, err = r.Ring.Lookup(ctx, key); err != nil {
			r.log().Debug("fetch-time owner lookup failed; fetching here", "url", url, "err", err)
			return false
		}
	}
	if owner.Peer != r.Self {
		return true
	}
	// Another view of the ring says a local virtual server owns it: the
	// claims decide as for any URL of ours, and mark it as fetched here.
	return r.toFetch(ctx, url, key, owner)
}

// toFetch asks the day's claims whether the local virtual server v
// fetches url, and reports whether it does not (Moved).
func (r *Relocator) toFetch(ctx context.Context, url string, key id.ID, v ring.Node) bool {
	out, via := r.Claims.ToFetchVia(ctx, url, key, v, r.Day())
	if out == claim.Drop && r.Confirms != nil && r.Confirms(url) {
		// A former owner fetched it today, but only this node's own
		// fetch releases the record it holds: a second fetch today.
		return false
	}
	if out == claim.PassOn && via.Peer != "" {
		r.via.put(url, via)
	}
	return out != claim.Fetch
}

// PassOn queues url for its owner as a link passed on once (hops 1), so
// the forwarder's per-day dedupe of this node's own links does not drop
// it.
//
// A URL that is another node's for the day by a claim leaves the queue
// without being passed on: its owner has it.
func (r *Relocator) PassOn(_ context.Context, url string) error {
	if r.Claims.Dropped(id.OfString(url), r.Day()) { // another node's today by a claim
		r.log().Debug("relocate: dropped: another node's today by a claim", "url", url)
		return nil
	}
	var via *ring.Node
	if n, ok := r.via.take(url); ok {
		via = &n
	}
	if err := r.Enqueue([]string{url}, 1, via, false); err != nil {
		return fmt.Errorf("pass on %s: %w", url, err)
	}
	return nil
}
