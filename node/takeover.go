package node

import (
	"context"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// rangeTracker remembers the last known start of each local virtual
// server's range, to tell when a range grew: Chord forgets a dead
// predecessor before it learns the next one, so a take-over shows as two
// changes, known → unknown → known with an earlier start.
type rangeTracker map[id.ID]id.ID

// gained returns the keys a virtual server took over with ev: when its
// range grew at the front — its predecessor died or left — from
// (old, End] to (new, End], the keys (new, old]. ok is false for any
// other change: a range first known (this node's own join), one that
// shrank (a node joined in front of it), or one not known now.
func (rt rangeTracker) gained(ev ring.Event) (ring.Range, bool) {
	if ev.Kind != ring.RangeChanged {
		return ring.Range{}, false
	}
	old, seen := rt[ev.Vnode.ID]
	if ev.OldRange.Known {
		old, seen = ev.OldRange.Start, true
	}
	nw := ev.NewRange
	if !nw.Known {
		if seen {
			rt[ev.Vnode.ID] = old
		}
		return ring.Range{}, false
	}
	rt[ev.Vnode.ID] = nw.Start
	if !seen || old == nw.Start || !id.InOpen(old, nw.Start, nw.End) {
		return ring.Range{}, false
	}
	return ring.Range{Start: nw.Start, End: old, Known: true}, true
}

// takeOverLoop watches the ring for ranges this node takes over in the
// middle of a day and has the crawler queue their known URLs for today
// (crawl.Crawler.TakeOver): a node that dies just before or after a day
// starts would otherwise leave its range unfetched until the next day.
// URLs the dead node had already fetched today are fetched again, once.
func (n *Node) takeOverLoop(ctx context.Context, events <-chan ring.Event) {
	rt := rangeTracker{}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			g, ok := rt.gained(ev)
			if !ok {
				continue
			}
			// Claims made in g by newer owners that are gone are void now.
			n.claims.Release(ctx, g, n.claimDay())
			q, err := n.crawler.TakeOver(ctx, func(u string) bool {
				k := id.OfString(u)
				return g.Contains(k) && n.ring.Owns(k)
			})
			if err != nil {
				if ctx.Err() == nil {
					n.log.Warn("taking over a range's URLs failed; they are queued at the next day", "vnode", ev.Vnode.ID.Short(), "err", err)
				}
				continue
			}
			n.counters.takenOver.Add(int64(q))
			n.log.Info("took over a range", "vnode", ev.Vnode.ID.Short(), "from", g.Start.Short(), "to", g.End.Short(), "queued", q)
		}
	}
}
