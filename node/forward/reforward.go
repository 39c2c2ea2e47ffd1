package forward

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Re-forwarding after a take-over. A crawler forwards a page's links only
// when the page changes, so a URL whose only link sits on a page that
// never changes travels once, to the owner of the day it was found; if
// that owner dies and the replicated known set missed the URL, nothing
// would bring it to the next owner. So a node that takes over a range
// (AnnounceTakeOver) tells every real node of the ring, and each of them
// — the new owner included — re-forwards once the links of its pages
// (their crawl states' outlinks, Outlinker) that fall in the range,
// bypassing the forwarder's "delivered today" memory: the new owner's
// URL-seen test drops what it has, and queues what it lacked, so its
// range is complete by its next day and mostly the same day.
//
// Any member may announce, so a span another member announces is done
// only once this node's ring agrees that the announcer owns all of it:
// the owner of the span's first key is one of the announcer's virtual
// servers, and the span ends at or before that server's id. The ring may
// not yet know of the death that made the take-over, so a span that
// fails the check is checked again after 5 s, then at doubling delays,
// maxVerifyTries times in all (about 2.5 minutes; stabilisation takes
// seconds), and refused after that (ReforwardStats.Refused).

// Span is a key range (A, B] a node took over (Header.Reforward).
type Span struct {
	A id.ID `json:"a"`
	B id.ID `json:"b"`
}

// Contains reports whether k is in (A, B].
func (s Span) Contains(k id.ID) bool {
	return (ring.Range{Start: s.A, End: s.B, Known: true}).Contains(k)
}

// Outlinker is implemented by crawlers that can list the links of the
// pages they crawled (*crawl.Crawler does): the links whose URL in
// accepts, those the scope admits as links and, apart, the page
// requisites it admits only as such (with a query string).
type Outlinker interface {
	LinksInto(ctx context.Context, in func(url string) bool) (links, reqs []string, err error)
}

// Re-forward limits.
const (
	// maxAnnounce bounds the real nodes a take-over is announced to.
	maxAnnounce = 1 << 10
	// announceParallel is how many announcements are under way at once.
	announceParallel = 8
	// maxSpansQueued bounds the spans waiting for a re-forward; more
	// are dropped (counted): the replicated known set still carries
	// their URLs.
	maxSpansQueued = 64
	// maxSpansSeen bounds the spans remembered as re-forwarded, so that
	// one announced twice (a walk meets a node by several virtual
	// servers, two take-overs of one range) is done once.
	maxSpansSeen = 1 << 12
	// maxSpansPerPeer bounds the spans one other member may have this
	// node re-forward a day: a take-over announces one span per range
	// taken, so an honest heir stays far below it, while a member that
	// announces made-up spans (any member may announce) costs each node
	// at most this many passes over its crawl states a day.
	maxSpansPerPeer = 16
	// maxVerifyTries is how many times a span another member announced
	// is checked against this node's ring before it is refused;
	// verifyRetry is the delay before the second check, doubled for
	// each next one.
	maxVerifyTries = 6
	verifyRetry    = 5 * time.Second
)

// pendingSpan is a span waiting for its re-forward: announced by member
// from ("" for this node), not to be checked before at.
type pendingSpan struct {
	sp    Span
	from  string
	at    time.Time
	tries int
}

// reforwards is Links' queue of spans to re-forward. Guarded by mu.
type reforwards struct {
	mu      sync.Mutex
	queue   []pendingSpan
	running bool
	seen    map[Span]bool
	wake    chan struct{}
	byPeer  map[string]int // spans each other member announced since dayOf
	dayOf   time.Time
}

// ReforwardStats counts re-forwards since start.
type ReforwardStats struct {
	Announced int64 // take-overs this node announced
	Spans     int64 // spans this node re-forwarded
	Links     int64 // links (and requisites) it re-forwarded for them
	Dropped   int64 // spans dropped: queue full, or their announcer past maxSpansPerPeer
	Refused   int64 // spans refused: this node's ring never agreed their announcer owns them
	Failed    int64 // spans whose re-forward failed (listing or queuing the links)
}

// AnnounceTakeOver tells every real node of the ring that this node took
// over span g (a dead or departed predecessor's keys), this node first,
// so that each re-forwards the links of its pages into g. It finds the
// nodes by walking the ring's successor lists from g's end, and returns
// how many nodes it told; it goes on past a node that cannot be told and
// returns the errors joined.
func (l *Links) AnnounceTakeOver(ctx context.Context, g ring.Range) (int, error) {
	sp := Span{A: g.Start, B: g.End}
	l.rfStats.announced.Add(1)
	l.queueReforward("", sp)
	nodes, err := l.Ring.Successors(ctx, g.End, maxAnnounce)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("announce take-over: %w", err))
	}
	told := 1
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, announceParallel)
	seen := map[string]bool{l.Self: true}
	for _, n := range nodes {
		if seen[n.Peer] {
			continue
		}
		seen[n.Peer] = true
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := l.sendAnnounce(ctx, n, sp)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("announce take-over to %s: %w", n.Addr, err))
				return
			}
			told++
		}()
	}
	wg.Wait()
	return told, errors.Join(errs...)
}

// sendAnnounce asks node n to re-forward its links into sp.
func (l *Links) sendAnnounce(ctx context.Context, n ring.Node, sp Span) error {
	return l.sendBatch(ctx, n, Header{VS: n.Index, Reforward: &sp, Want: WantNone}, nil)
}

// queueReforward queues sp, announced by member from ("" for this node),
// for RunReforward unless it was queued before or from announced
// maxSpansPerPeer spans in the last day.
func (l *Links) queueReforward(from string, sp Span) {
	r := &l.rf
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[Span]bool{}
		r.wake = make(chan struct{}, 1)
	}
	if r.seen[sp] {
		return
	}
	if now := time.Now(); r.byPeer == nil || now.Sub(r.dayOf) > 24*time.Hour {
		r.byPeer, r.dayOf = map[string]int{}, now
	}
	if len(r.queue) >= maxSpansQueued || (from != "" && r.byPeer[from] >= maxSpansPerPeer) {
		l.rfStats.dropped.Add(1)
		return
	}
	if from != "" {
		r.byPeer[from]++
	}
	if len(r.seen) >= maxSpansSeen {
		clear(r.seen)
	}
	r.seen[sp] = true
	r.queue = append(r.queue, pendingSpan{sp: sp, from: from})
	r.signal()
}

// signal wakes RunReforward. r.wake is made with r.seen.
func (r *reforwards) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Reforwarding reports whether a span waits for its re-forward or one
// is under way.
func (l *Links) Reforwarding() bool {
	l.rf.mu.Lock()
	defer l.rf.mu.Unlock()
	return len(l.rf.queue) > 0 || l.rf.running
}

// RunReforward re-forwards the spans announced to this node, one at a
// time, until ctx ends: the links of this node's pages in the span
// (the Crawler's Outlinker) go to the forwarder as if new
// (Forwarder.Reforward), once the span is verified (see above). Without
// an Outlinker it only drains the queue.
func (l *Links) RunReforward(ctx context.Context) {
	l.rf.mu.Lock()
	if l.rf.wake == nil {
		l.rf.seen = map[Span]bool{}
		l.rf.wake = make(chan struct{}, 1)
	}
	wake := l.rf.wake
	l.rf.mu.Unlock()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p, have, next := l.nextSpan(time.Now())
		if !have {
			var due <-chan time.Time
			if !next.IsZero() {
				timer.Reset(time.Until(next))
				due = timer.C
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-due:
			}
			continue
		}
		if p.from != "" && !l.verifySpan(ctx, p) {
			continue
		}
		if err := l.reforward(ctx, p.sp); err != nil && ctx.Err() == nil {
			l.rfStats.failed.Add(1)
			l.Log().Warn("links: re-forwarding the links into a range taken over failed; the replicated known set still carries them",
				"from", p.sp.A.Short(), "to", p.sp.B.Short(), "err", err)
		}
		l.rf.mu.Lock()
		l.rf.running = false
		l.rf.mu.Unlock()
	}
}

// nextSpan takes the first queued span due at now, marking a re-forward
// under way; with none due, it returns when the next one is (zero if
// none waits).
func (l *Links) nextSpan(now time.Time) (pendingSpan, bool, time.Time) {
	r := &l.rf
	r.mu.Lock()
	defer r.mu.Unlock()
	var next time.Time
	for i, p := range r.queue {
		if !p.at.After(now) {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			r.running = true
			return p, true, time.Time{}
		}
		if next.IsZero() || p.at.Before(next) {
			next = p.at
		}
	}
	return pendingSpan{}, false, next
}

// verifySpan reports whether this node's ring agrees that p's announcer
// owns all of p's span (see above). When it does not, it queues p to be
// checked again later, or refuses it after maxVerifyTries checks.
func (l *Links) verifySpan(ctx context.Context, p pendingSpan) bool {
	n, err := l.Ring.Lookup(ctx, p.sp.A.AddPow2(0))
	if err == nil && p.sp.A != p.sp.B && n.Peer == p.from && id.InHalfOpen(p.sp.B, p.sp.A, n.ID) {
		return true
	}
	r := &l.rf
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running = false
	p.tries++
	if p.tries >= maxVerifyTries || ctx.Err() != nil {
		l.rfStats.refused.Add(1)
		l.Log().Warn("links: refused a take-over announcement: the ring does not give the announcer that range",
			"announcer", p.from, "from", p.sp.A.Short(), "to", p.sp.B.Short(), "owner", n.Peer, "err", err)
		return false
	}
	delay := l.verifyRetry
	if delay == 0 {
		delay = verifyRetry
	}
	p.at = time.Now().Add(delay << (p.tries - 1))
	r.queue = append(r.queue, p)
	return false
}

// reforward re-forwards this node's links into sp.
func (l *Links) reforward(ctx context.Context, sp Span) error {
	o, ok := l.Crawler.(Outlinker)
	if !ok {
		return nil
	}
	links, reqs, err := o.LinksInto(ctx, func(u string) bool { return sp.Contains(id.OfString(u)) })
	if err != nil {
		return err
	}
	if err := l.Forwarder.Reforward(links, reqs); err != nil {
		return err
	}
	l.rfStats.spans.Add(1)
	l.rfStats.links.Add(int64(len(links) + len(reqs)))
	l.Log().Info("links: re-forwarded the links into a range taken over", "from", sp.A.Short(), "to", sp.B.Short(),
		"links", len(links), "requisites", len(reqs))
	return nil
}

// ReforwardStats returns a snapshot of the re-forward counters.
func (l *Links) ReforwardStats() ReforwardStats {
	s := &l.rfStats
	return ReforwardStats{Announced: s.announced.Load(), Spans: s.spans.Load(), Links: s.links.Load(),
		Dropped: s.dropped.Load(), Refused: s.refused.Load(), Failed: s.failed.Load()}
}

// Reforward queues links and page requisites (reqs) for delivery to their
// owners even if they were delivered earlier today: the forwarder's
// memory of what owners acknowledged is for owners that keep what they
// were given, and a take-over's new owner may lack them. Links waiting
// already are not queued twice.
func (f *Forwarder) Reforward(links, reqs []string) error {
	f.mu.Lock()
	for _, u := range links {
		f.delivered.forget(id.OfString(u))
	}
	for _, u := range reqs {
		f.delivered.forget(id.OfString(u))
	}
	f.mu.Unlock()
	if err := f.Enqueue(links, 0, nil, false); err != nil {
		return err
	}
	return f.Enqueue(reqs, 0, nil, true)
}
