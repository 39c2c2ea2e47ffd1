package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// router finds the owner of a key; *ring.Ring implements it.
type router interface {
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
}

// pendingLink is a link waiting to be delivered to its owner.
type pendingLink struct {
	url  string
	key  id.ID
	hops int
}

// forwarder batches links by owner and delivers each batch with one message
// per real node. A link leaves the buffer only when its recipient has
// acknowledged it; a failed delivery puts the batch back for the next flush.
//
// Within a flush the links are sorted by key and owners are found with one
// lookup per run of keys (the owner of key k owns every key in [k, owner.ID]),
// so the lookup cost is per owner, not per link.
type forwarder struct {
	route   router
	self    string // peer id of this node: links it owns are delivered locally
	local   func(ctx context.Context, urls []string) error
	remote  func(ctx context.Context, to ring.Contact, urls []string, hops int) error
	every   time.Duration
	maxSize int
	log     *slog.Logger

	mu       sync.Mutex
	pending  []pendingLink
	inflight int
	kick     chan struct{}

	sent, delivered, lookups, failures atomic.Int64
	lastErr                            atomic.Pointer[string]
}

// ForwardStats reports the forwarder's progress.
type ForwardStats struct {
	Pending   int    `json:"pending"`  // links waiting for delivery
	InFlight  int    `json:"inFlight"` // links sent and not yet acknowledged
	Sent      int64  `json:"sent"`     // links delivered to other nodes
	Local     int64  `json:"local"`    // links delivered to this node's own crawler
	Lookups   int64  `json:"lookups"`  // ring lookups spent on routing
	Failures  int64  `json:"failures"` // deliveries that failed and were retried
	LastError string `json:"lastError,omitempty"`
}

func newForwarder(r router, self string, local func(context.Context, []string) error,
	remote func(context.Context, ring.Contact, []string, int) error,
	every time.Duration, maxSize int, log *slog.Logger) *forwarder {
	return &forwarder{
		route: r, self: self, local: local, remote: remote,
		every: every, maxSize: maxSize, log: log,
		kick: make(chan struct{}, 1),
	}
}

// Forward queues canonical urls for delivery to their owners. It implements
// crawl.Forwarder.
func (f *forwarder) Forward(_ context.Context, urls []string) error {
	f.enqueue(urls, 0)
	return nil
}

func (f *forwarder) enqueue(urls []string, hops int) {
	if len(urls) == 0 {
		return
	}
	f.mu.Lock()
	for _, u := range urls {
		f.pending = append(f.pending, pendingLink{url: u, key: id.OfString(u), hops: hops})
	}
	full := len(f.pending) >= f.maxSize
	f.mu.Unlock()
	if full {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
}

// Busy reports whether links are waiting or unacknowledged.
func (f *forwarder) Busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)+f.inflight > 0
}

// Stats returns a snapshot of the forwarder's counters.
func (f *forwarder) Stats() ForwardStats {
	f.mu.Lock()
	st := ForwardStats{Pending: len(f.pending), InFlight: f.inflight}
	f.mu.Unlock()
	st.Sent, st.Local = f.sent.Load(), f.delivered.Load()
	st.Lookups, st.Failures = f.lookups.Load(), f.failures.Load()
	if p := f.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// run flushes the buffer every interval, or sooner when it fills, until ctx ends.
func (f *forwarder) run(ctx context.Context) {
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.kick:
		}
		f.flush(ctx)
	}
}

// flush routes and delivers everything pending.
func (f *forwarder) flush(ctx context.Context) {
	f.mu.Lock()
	batch := f.pending
	f.pending = nil
	taken := len(batch)
	f.inflight += taken
	f.mu.Unlock()
	if taken == 0 {
		return
	}
	slices.SortFunc(batch, func(a, b pendingLink) int { return a.key.Cmp(b.key) })
	batch = slices.CompactFunc(batch, func(a, b pendingLink) bool { return a.url == b.url })

	groups, unrouted := f.group(ctx, batch)
	var failed []pendingLink
	failed = append(failed, unrouted...)
	for _, g := range groups {
		if err := f.deliver(ctx, g); err != nil {
			f.failures.Add(1)
			msg := err.Error()
			if prev := f.lastErr.Swap(&msg); prev == nil || *prev != msg {
				f.log.Warn("forward: delivery failed; will retry", "to", g.to.Addr, "links", len(g.links), "err", err)
			}
			failed = append(failed, g.links...)
		}
	}
	f.mu.Lock()
	f.inflight -= taken
	f.pending = append(f.pending, failed...)
	f.mu.Unlock()
}

// ownerGroup is the links one real node owns.
type ownerGroup struct {
	to    ring.Contact
	links []pendingLink
}

// group assigns sorted links to the real nodes that own them. Links whose
// owner cannot be found are returned for a later attempt.
func (f *forwarder) group(ctx context.Context, sorted []pendingLink) ([]ownerGroup, []pendingLink) {
	byPeer := map[string]int{}
	var groups []ownerGroup
	for i := 0; i < len(sorted); {
		f.lookups.Add(1)
		owner, err := f.route.Lookup(ctx, sorted[i].key)
		if err != nil {
			f.failures.Add(1)
			msg := fmt.Sprintf("lookup: %v", err)
			f.lastErr.Store(&msg)
			return groups, sorted[i:]
		}
		j := i + 1
		for j < len(sorted) && id.InHalfOpen(sorted[j].key, sorted[i].key, owner.ID) {
			j++
		}
		g, ok := byPeer[owner.Peer]
		if !ok {
			g = len(groups)
			byPeer[owner.Peer] = g
			groups = append(groups, ownerGroup{to: owner.Contact})
		}
		groups[g].links = append(groups[g].links, sorted[i:j]...)
		i = j
	}
	return groups, nil
}

// deliver hands one group to its owner, locally or over the network.
func (f *forwarder) deliver(ctx context.Context, g ownerGroup) error {
	urls := make([]string, len(g.links))
	hops := 0
	for i, l := range g.links {
		urls[i] = l.url
		hops = max(hops, l.hops)
	}
	if g.to.Peer == f.self {
		if err := f.local(ctx, urls); err != nil {
			return fmt.Errorf("local delivery: %w", err)
		}
		f.delivered.Add(int64(len(urls)))
		return nil
	}
	if err := f.remote(ctx, g.to, urls, hops); err != nil {
		return err
	}
	f.sent.Add(int64(len(urls)))
	return nil
}
