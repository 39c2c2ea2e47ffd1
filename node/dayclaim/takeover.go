package dayclaim

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// rangeTracker remembers the last known start of each local virtual
// server's range, to tell when a range grew: Chord forgets a dead
// predecessor before it learns the next one, so a take-over shows as
// known → unknown → known with an earlier start.
type rangeTracker map[id.ID]id.ID

// grew returns the keys v's range grew by at the front since the start
// last seen, if it did.
func (rt rangeTracker) grew(v ring.VnodeStatus) (ring.Range, bool) {
	old, seen := rt[v.ID]
	nw := v.Range
	if !nw.Known || !seen || old == nw.Start || !id.InOpen(old, nw.Start, nw.End) {
		return ring.Range{}, false
	}
	return ring.Range{Start: nw.Start, End: old, Known: true}, true
}

// grown reports whether update would return a range for vs, without
// recording vs.
func (rt rangeTracker) grown(vs []ring.VnodeStatus) bool {
	return slices.ContainsFunc(vs, func(v ring.VnodeStatus) bool { _, ok := rt.grew(v); return ok })
}

// update compares the local virtual servers' ranges now (vs) with the
// last ones seen and returns the key ranges they grew by at the front —
// a predecessor died or left, so (old, End] became (new, End] and the
// keys (new, old] are this node's now. A range first seen (this node's
// own join, a virtual server that moved), one that shrank (a node joined
// in front of it) or one not known now gains nothing; an unknown range
// keeps its last known start. It reads states, not events, so a change
// is seen however many events a burst dropped.
func (rt rangeTracker) update(vs []ring.VnodeStatus) []ring.Range {
	var out []ring.Range
	live := make(map[id.ID]bool, len(vs))
	for _, v := range vs {
		live[v.ID] = true
		if !v.Range.Known {
			continue
		}
		if g, ok := rt.grew(v); ok {
			out = append(out, g)
		}
		rt[v.ID] = v.Range.Start
	}
	for v := range rt {
		if !live[v] {
			delete(rt, v)
		}
	}
	return out
}

// TakeOver watches the ring for ranges this node takes over in the
// middle of a day and has the crawler queue their known URLs for today:
// a node that dies just before or after a day starts would otherwise
// leave its range unfetched until the next day. URLs the dead node had
// already fetched today are fetched again, once. Ring events only wake
// it: it compares the ranges it sees now with the last ones, so a dropped
// event loses nothing. Every field but Logger must be set before Run.
type TakeOver struct {
	Ring interface {
		Status() ring.Status // the local virtual servers' ranges
		Owns(key id.ID) bool // whether a local virtual server owns key
	}
	Claims *claim.Claims
	Day    func() int64 // the day claims are made for
	// Queue has the crawler queue for today the known URLs in reports
	// true for (crawl.Crawler.TakeOver), and returns how many it queued.
	Queue func(ctx context.Context, in func(url string) bool) (int, error)
	// Announce, if set, tells the ring's nodes that this node took over
	// g, once its known URLs are queued, so that they re-forward the
	// links of their pages into it (forward.Links.AnnounceTakeOver).
	Announce func(ctx context.Context, g ring.Range)
	Logger   *slog.Logger // nil: discard

	busy  atomic.Bool                       // a ring change is being handled
	sub   atomic.Pointer[ring.Subscription] // set by Watch
	taken atomic.Int64                      // URLs queued by take-overs

	mu sync.Mutex   // guards rt
	rt rangeTracker // the ranges last handled; nil until Run starts
}

// Watch sets the ring subscription Run reads: from then on Idle is false
// while a ring change waits to be handled.
func (t *TakeOver) Watch(sub *ring.Subscription) { t.sub.Store(sub) }

// Idle reports whether no ring change waits to be handled: none is being
// handled, none waits in the subscription, and no local range has grown
// since the last one was handled. The last check reads the ring's state,
// so a change Run has received but not yet marked busy, or whose event
// is still on its way, does not count as handled.
func (t *TakeOver) Idle() bool {
	s := t.sub.Load()
	if s == nil {
		return true
	}
	if t.busy.Load() || len(s.C) > 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rt == nil || !t.rt.grown(t.Ring.Status().Vnodes)
}

// Taken returns how many URLs take-overs queued since the node started.
func (t *TakeOver) Taken() int64 { return t.taken.Load() }

// Run handles the ring changes of the subscription Watch set, until ctx
// ends or the subscription closes.
func (t *TakeOver) Run(ctx context.Context) {
	sub := t.sub.Load()
	t.mu.Lock()
	t.rt = rangeTracker{}
	t.rt.update(t.Ring.Status().Vnodes)
	t.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-sub.C:
			if !ok {
				return
			}
		}
		t.busy.Store(true)
	drain:
		for {
			select {
			case _, ok := <-sub.C:
				if !ok {
					return
				}
			default:
				break drain
			}
		}
		t.mu.Lock()
		gained := t.rt.update(t.Ring.Status().Vnodes)
		t.mu.Unlock()
		for _, g := range gained {
			t.takeOverRange(ctx, g)
		}
		t.busy.Store(false)
	}
}

// takeOverRange queues the known URLs of g, a range this node took over.
func (t *TakeOver) takeOverRange(ctx context.Context, g ring.Range) {
	// Claims made in g by newer owners that are gone are void now.
	t.Claims.Release(ctx, g, t.Day())
	q, err := t.Queue(ctx, func(u string) bool {
		k := id.OfString(u)
		return g.Contains(k) && t.Ring.Owns(k)
	})
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("taking over a range's URLs failed; they are queued at the next day", "from", g.Start.Short(), "to", g.End.Short(), "err", err)
		}
		return
	}
	t.taken.Add(int64(q))
	log.Info("took over a range", "from", g.Start.Short(), "to", g.End.Short(), "queued", q)
	if t.Announce != nil {
		t.Announce(ctx, g)
	}
}
