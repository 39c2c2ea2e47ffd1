package forward

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// pendingLink is a link waiting to be delivered to its owner.
type pendingLink struct {
	url  string
	key  id.ID
	hops int
	// req marks a page requisite (crawl.RequisiteForwarder): its owner
	// queues it with Crawler.AddRequisites, which admits a query string.
	req bool
	// via, if set, is where to send the link instead of walking to it: a
	// closer owner than this node's routing knows (ring.CloserOwner). It
	// is not kept in the outbox; a failed delivery drops it.
	via *ring.Node
}

// Batch is what one hop of a ring walk hands to one virtual server.
type Batch struct {
	URLs    []string
	Hops    int  // how often these links were passed on by non-owners
	Replica bool // the recipient keeps them as a replica of its predecessor's range
	// Requisites says the links are page requisites: the recipient
	// queues them with crawl.Crawler.AddRequisites.
	Requisites bool
	// Want says which of its successors the recipient answers with: 0 its
	// first ReplySuccessors (what replica mode needs), WantNone none, and
	// WantNext only the one that owns Next, if its list reaches that far
	// (the thesis's "the owner answers with its successor": the walk
	// needs no more, and four successors cost more bytes than a dozen
	// compressed links).
	Want int
	Next id.ID
}

// Values of Batch.Want (and Header.Want).
const (
	WantAll  = 0  // the first ReplySuccessors successors
	WantNone = -1 // no successors
	WantNext = 1  // only the successor that owns Batch.Next
)

// DeliverFunc hands a batch to the virtual server to, on this node or
// another, and returns to's successor list (nearest first), which the walk
// follows. It returns only once the recipient has queued the links.
type DeliverFunc func(ctx context.Context, to ring.Node, b Batch) ([]ring.Node, error)

// Config configures a Forwarder.
type Config struct {
	Ring      Router
	Deliver   DeliverFunc
	Outbox    *Outbox       // durable copy of the buffer; nil keeps it in memory only
	Every     time.Duration // walk at least this often while links wait
	PerVnode  int           // walk once the buffer holds PerVnode × ring size links
	RingSize  func() int    // estimated virtual servers in the ring
	Replicas  int           // deliver each link to its owner and Replicas-1 successors
	Logger    *slog.Logger
	LocalPeer string // this node's peer id
	// Day returns the current crawl day. Links acknowledged by their
	// owner are not sent again until it changes (nil: never changes).
	Day func() int64
	// Idle reports whether the local crawler has no URL waiting to be
	// fetched. New links then start a walk at once instead of waiting for
	// the buffer to fill or the timer: they may be the only work the
	// crawler can get (a crawl's first pages, a small site). Walks still
	// run one at a time, so links that arrive during one share the next.
	// Nil: never idle.
	Idle func() bool
	// ShareKnown hands URLs to the nodes that should remember them (see
	// crawl.KnownSharer); nil refuses.
	ShareKnown func(ctx context.Context, urls []string) error
}

// Router finds the owner of a key; *ring.Ring implements it.
type Router interface {
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
	// LocalOwner returns key's owner when the node's own tables know it
	// without a message (ring.Ring.LocalOwner), and false otherwise.
	LocalOwner(key id.ID) (ring.Node, bool)
}

// Forwarder buffers extracted links and ships them to their owners by
// walking the ring, the thesis's ring forwarding: links are sorted by key,
// one lookup finds the owner of the first, and from then on each recipient
// answers with the successor that owns the next key, so a walk costs one
// lookup however many links and owners it serves. A link leaves the buffer
// (and the durable outbox) only when its owner has acknowledged it; a
// failed delivery puts it back for the next walk.
type Forwarder struct {
	cfg Config
	log *slog.Logger

	mu           sync.Mutex
	pending      map[string]pendingLink // by URL: many pages link to the same URL
	inflight     int
	passingOn    int          // links of pending and in flight that other nodes passed on (hops > 0)
	delivered    deliveredSet // links their owners acknowledged on day deliveredDay
	deliveredDay int64
	kick         chan struct{}

	sent, local, walks, hops, lookups, failures, replicas, skipped, direct atomic.Int64
	lastErr                                                                atomic.Pointer[string]
}

// Stats reports the forwarder's progress.
type Stats struct {
	Pending   int    `json:"pending"`  // links waiting for delivery
	InFlight  int    `json:"inFlight"` // links in a walk under way
	Sent      int64  `json:"sent"`     // links delivered to other nodes
	Local     int64  `json:"local"`    // links delivered to this node's own crawler
	Walks     int64  `json:"walks"`    // ring walks
	Hops      int64  `json:"hops"`     // batches delivered, one per virtual server visited
	Lookups   int64  `json:"lookups"`  // ring lookups spent on routing
	Replicas  int64  `json:"replicas"` // links delivered as replicas to owners' successors
	Failures  int64  `json:"failures"` // deliveries that failed and were retried
	Skipped   int64  `json:"skipped"`  // links not queued again: waiting already, or acknowledged today
	Direct    int64  `json:"direct"`   // of Sent and Local, links passed on straight to a closer owner (ring.CloserOwner), not walked
	LastError string `json:"lastError,omitempty"`
}

// New returns a forwarder for cfg. With cfg.Outbox set it resumes the
// links the outbox holds from the last run; it walks only once Run runs.
func New(cfg Config) (*Forwarder, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Replicas < 1 {
		cfg.Replicas = 1
	}
	f := &Forwarder{cfg: cfg, log: cfg.Logger, pending: map[string]pendingLink{},
		kick: make(chan struct{}, 1)}
	if cfg.Outbox != nil {
		links, err := cfg.Outbox.load()
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			f.putLocked(l)
		}
		if len(links) > 0 {
			f.log.Info("forward: resuming links left from the last run", "links", len(links))
		}
	}
	return f, nil
}

// Forward queues canonical urls for delivery to their owners. It implements
// crawl.Forwarder. The links are durable (in the outbox) when it returns.
// A link already waiting, or acknowledged by its owner earlier the same
// day, is not queued again: its owner has it (the thesis runs the URL-seen
// test at the owner, and that test would drop it), and most links on a
// site are the same few navigation targets on every page.
func (f *Forwarder) Forward(_ context.Context, urls []string) error {
	return f.enqueue(urls, 0, nil)
}

// ShareKnown implements crawl.KnownSharer through Config.ShareKnown.
func (f *Forwarder) ShareKnown(ctx context.Context, urls []string) error {
	if f.cfg.ShareKnown == nil {
		return errors.New("forwarder: no known-URL sharing")
	}
	return f.cfg.ShareKnown(ctx, urls)
}

// ForwardRequisites is Forward for page requisites, which their owners
// queue with crawl.Crawler.AddRequisites. It implements
// crawl.RequisiteForwarder. A URL waiting or delivered today as a plain
// link travels again as a requisite (the owner may have refused it as
// dynamic).
func (f *Forwarder) ForwardRequisites(_ context.Context, urls []string) error {
	return f.Enqueue(urls, 0, nil, true)
}

// enqueue buffers urls, passed on hops times so far, for the next walk;
// with via set they go straight to via instead.
func (f *Forwarder) enqueue(urls []string, hops int, via *ring.Node) error {
	return f.Enqueue(urls, hops, via, false)
}

// Enqueue is enqueue for links (req false) or requisites (req true): it
// buffers urls, passed on hops times so far, for the next walk, or with
// via set sends them straight to via. The links are durable (in the
// outbox) when it returns.
func (f *Forwarder) Enqueue(urls []string, hops int, via *ring.Node, req bool) error {
	if len(urls) == 0 {
		return nil
	}
	links := make([]pendingLink, 0, len(urls))
	for _, u := range urls {
		links = append(links, pendingLink{url: u, key: id.OfString(u), hops: hops, via: via, req: req})
	}
	f.mu.Lock()
	f.rollDayLocked()
	links = slices.DeleteFunc(links, func(l pendingLink) bool {
		if w, waiting := f.pending[l.url]; waiting && (w.req || !req) {
			return true
		}
		// A link passed on by a node that does not own it (hops > 0)
		// always travels: while views of the ring disagree it can come
		// back to the node that delivered it, and its hop count is what
		// ends that loop.
		return hops == 0 && f.delivered.has(l.key, req)
	})
	f.mu.Unlock()
	if len(links) < len(urls) && f.log.Enabled(context.Background(), slog.LevelDebug) {
		kept := make(map[string]bool, len(links))
		for _, l := range links {
			kept[l.url] = true
		}
		for _, u := range urls {
			if !kept[u] {
				f.log.Debug("forward: not sent: waiting, or delivered today", "url", u)
			}
		}
	}
	if skipped := len(urls) - len(links); skipped > 0 {
		f.skipped.Add(int64(skipped))
	}
	if len(links) == 0 {
		return nil
	}
	if f.cfg.Outbox != nil {
		if err := f.cfg.Outbox.add(links); err != nil {
			return fmt.Errorf("forward: %w", err)
		}
	}
	f.mu.Lock()
	for _, l := range links {
		f.putLocked(l)
	}
	full := len(f.pending) >= f.threshold()
	f.mu.Unlock()
	if full || (hops == 0 && f.cfg.Idle != nil && f.cfg.Idle()) {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// threshold is the buffer size that starts a walk: PerVnode links per
// virtual server in the ring, so each hop carries enough to amortize it.
func (f *Forwarder) threshold() int {
	n := 1
	if f.cfg.RingSize != nil {
		n = max(f.cfg.RingSize(), 1)
	}
	return max(f.cfg.PerVnode, 1) * n
}

// Busy reports whether links are waiting or in a walk.
func (f *Forwarder) Busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)+f.inflight > 0
}

// Stats returns a snapshot of the forwarder's counters.
func (f *Forwarder) Stats() Stats {
	f.mu.Lock()
	st := Stats{Pending: len(f.pending), InFlight: f.inflight}
	f.mu.Unlock()
	st.Sent, st.Local, st.Walks, st.Hops = f.sent.Load(), f.local.Load(), f.walks.Load(), f.hops.Load()
	st.Lookups, st.Failures, st.Replicas = f.lookups.Load(), f.failures.Load(), f.replicas.Load()
	st.Skipped, st.Direct = f.skipped.Load(), f.direct.Load()
	if p := f.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// Run walks the ring every interval while links wait, or at once when the
// buffer passes the threshold, until ctx ends.
func (f *Forwarder) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Every)
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

// Flush walks the ring now with every link waiting and returns when the
// walk ends (Run does this on its own; Flush is for walks by hand).
func (f *Forwarder) Flush(ctx context.Context) { f.flush(ctx) }

// flush takes everything pending and walks the ring with it.
func (f *Forwarder) flush(ctx context.Context) {
	f.mu.Lock()
	batch := make([]pendingLink, 0, len(f.pending))
	for _, l := range f.pending {
		batch = append(batch, l)
	}
	clear(f.pending)
	f.inflight += len(batch)
	f.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	slices.SortFunc(batch, func(a, b pendingLink) int { return a.key.Cmp(b.key) })
	var walked, direct []pendingLink
	for _, l := range batch {
		if l.via != nil {
			direct = append(direct, l)
		} else {
			walked = append(walked, l)
		}
	}
	done, failed := f.walk(ctx, walked)
	d, fl := f.sendDirect(ctx, direct)
	done, failed = append(done, d...), append(failed, fl...)
	if f.cfg.Outbox != nil && len(done) > 0 {
		if err := f.cfg.Outbox.remove(done); err != nil {
			// The links were delivered; at worst they are delivered again
			// after a restart, and the recipient's URL-seen test drops them.
			f.note(fmt.Errorf("outbox: %w", err))
		}
	}
	f.mu.Lock()
	f.inflight -= len(batch)
	f.rollDayLocked()
	for _, l := range done {
		f.delivered.add(l.key, l.req)
		if l.hops > 0 {
			f.passingOn--
		}
	}
	for _, l := range failed {
		if _, ok := f.pending[l.url]; !ok {
			f.pending[l.url] = l
		} else if l.hops > 0 {
			f.passingOn-- // a newer copy waits, counted when it came
		}
	}
	f.mu.Unlock()
}

// putLocked makes l pending, counting the links passed on by other
// nodes (PassingOn). The caller holds f.mu.
func (f *Forwarder) putLocked(l pendingLink) {
	if old, ok := f.pending[l.url]; ok && old.hops > 0 {
		f.passingOn--
	}
	if l.hops > 0 {
		f.passingOn++
	}
	f.pending[l.url] = l
}

// PassingOn returns how many links other nodes passed to this one, not
// its owner, wait here to be passed on (or are on their way).
func (f *Forwarder) PassingOn() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.passingOn
}

// sendDirect delivers links that carry a closer owner (via) to it, without
// a walk (deliverRun: one batch per hop count, and in replica mode to its
// successors, as for a walk). Links it could not deliver come back without
// via, to be walked next time.
func (f *Forwarder) sendDirect(ctx context.Context, links []pendingLink) (done, failed []pendingLink) {
	groups := map[ring.Node][]pendingLink{}
	var order []ring.Node
	for _, l := range links {
		if _, ok := groups[*l.via]; !ok {
			order = append(order, *l.via)
		}
		groups[*l.via] = append(groups[*l.via], l)
	}
	for _, to := range order {
		_, sent, rest, err := f.deliverRun(ctx, to, groups[to], nil)
		f.countDelivered(to, sent)
		f.direct.Add(int64(len(sent)))
		done = append(done, sent...)
		if err != nil {
			f.note(fmt.Errorf("deliver to closer owner %s: %w", to.Addr, err))
			for _, l := range rest {
				l.via = nil
				failed = append(failed, l)
			}
		}
	}
	return done, failed
}

// rollDayLocked forgets the links delivered on an earlier day: owners
// reset their URL-seen sets at the start of a day.
func (f *Forwarder) rollDayLocked() {
	if f.cfg.Day == nil {
		return
	}
	if d := f.cfg.Day(); d != f.deliveredDay {
		f.delivered.clear()
		f.deliveredDay = d
	}
}

// note records a delivery problem: counted, kept for status, logged once
// per distinct message.
func (f *Forwarder) note(err error) {
	f.failures.Add(1)
	msg := err.Error()
	if prev := f.lastErr.Swap(&msg); prev == nil || *prev != msg {
		f.log.Warn("forward: delivery failed; links kept for the next walk", "err", err)
	}
}
