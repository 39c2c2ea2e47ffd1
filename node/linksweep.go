package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/status"
)

// Which sources a link sweep reads. Reading a source costs its indexer
// state and its version list even when nothing changed, so a sweep that
// read every URL of the store was O(store) every LinkSweep (at 300 K
// URLs a fifth of a revisit day's CPU). A sweep now reads:
//
//   - the marked sources (links.Dirty): those the crawl stored a version
//     of since the last sweep (the archive's OnAdd, versionAdded) and
//     those whose records were not delivered;
//   - the stale sources of a slice of the slow pass, a walk of the
//     store's URLs in key order cut into the sweeps of one crawl day,
//     which repairs whatever a mark missed (a version imported, a mark
//     lost): every source is looked at least once a DayLength plus one
//     sweep, while the store grows by less than a quarter within a day
//     (the slice is 5/4 of its share);
//   - the stale sources of the whole store, when the marks are unknown:
//     the first sweep after a start, after more marks than links.Dirty
//     holds, after a range this node owns grew (the sources it took
//     over were imported), after a ring event was dropped.
//
// A source is stale when its newest version (archive.Store.Heads) is
// after the last version the indexer read and delivered (its read
// mark, links.Marks), or it has no mark: a source whose delivery
// failed keeps its old mark, one taken over has none. The walk reads
// the store's version index and the marks in the same key order, one
// sequential scan of each, so a sweep of every source costs a few
// microseconds for each one already delivered instead of its state
// and version list (BenchmarkLinkSweep).

// slowPass is the slow pass's place: the last key it walked, and the
// URLs of the store counted by the last whole walk.
type slowPass struct {
	mu    sync.Mutex
	after *id.ID // the walk goes on after it (nil: from the first)
	count int    // URLs walked in the pass so far
	total int    // URLs of the last whole pass (or full sweep)
}

// minPassSlice is the least a sweep's slice of the slow pass walks.
const minPassSlice = 256

// fullChunk is how many stale sources a full sweep reads at a time: its
// memory is bounded by them, not by the store.
const fullChunk = 4096

// errSliceDone stops the walk of the store at the end of a slice.
var errSliceDone = errors.New("slice done")

// passSweeps is how many sweeps a slow pass is spread over: those of
// one crawl day (at least 1).
func (n *Node) passSweeps() int {
	every := n.cfg.LinkSweep
	if every <= 0 {
		every = DefaultLinkSweep
	}
	day := n.cfg.DayLength
	if day <= 0 {
		day = DefaultDayLength
	}
	return max(int(day/every), 1)
}

// staleWalk is one piece of a walk of the store in key order.
type staleWalk struct {
	sources []string // the stale sources this node owns, in key order
	last    id.ID    // the last key walked (when walked > 0)
	walked  int      // URLs walked
	skipped int      // sources this node owns already delivered
	done    bool     // the walk reached the store's end
}

// staleSources walks the store's URLs in key order after after (nil:
// from the first), at most budget of them (<= 0: no bound) and until it
// holds most stale sources (<= 0: no bound), and returns the stale
// sources this node owns.
func (n *Node) staleSources(ctx context.Context, after *id.ID, budget, most int) (staleWalk, error) {
	var w staleWalk
	marks := n.linkIdx.indexer.Marks(after)
	err := n.store.Heads(ctx, after, func(h archive.Head) error {
		if (budget > 0 && w.walked == budget) || (most > 0 && len(w.sources) == most) {
			return errSliceDone
		}
		w.walked++
		w.last = h.Key
		if !n.ring.Owns(h.Key) {
			return nil
		}
		if read, ok := marks.Read(h.Key); ok && !h.Newest.After(read) {
			w.skipped++
			return nil
		}
		w.sources = append(w.sources, string(h.URL))
		return nil
	})
	merr := marks.Release() // a mark not read counts as absent: its source is read
	switch {
	case errors.Is(err, errSliceDone):
		err = nil
	case err == nil:
		w.done = true
	}
	return w, errors.Join(err, merr)
}

// sweepAll reads the stale sources of the whole store, fullChunk at a
// time, and starts the slow pass again (its work is done).
func (n *Node) sweepAll(ctx context.Context) (int, error) {
	li := n.linkIdx
	li.stats.full.Add(1)
	var after *id.ID
	sent, total := 0, 0
	var first error
	for {
		w, err := n.staleSources(ctx, after, 0, cmp.Or(li.chunk, fullChunk))
		total += w.walked
		li.stats.skipped.Add(int64(w.skipped))
		if err != nil {
			li.dirty.MarkAll() // the rest of the store is unknown
			return sent, errors.Join(first, err)
		}
		s, err := n.syncSources(ctx, w.sources)
		sent += s
		if err != nil && first == nil {
			first = err
		}
		if ctx.Err() != nil && !w.done {
			li.dirty.MarkAll()
			return sent, errors.Join(first, ctx.Err())
		}
		if w.done {
			break
		}
		after = &w.last
	}
	li.pass.mu.Lock()
	li.pass.after, li.pass.count, li.pass.total = nil, 0, total
	li.pass.mu.Unlock()
	return sent, first
}

// sweepMarked reads the marked sources this node owns and the stale
// sources of the slow pass's next slice.
func (n *Node) sweepMarked(ctx context.Context, marked []string) (int, error) {
	li := n.linkIdx
	li.stats.partial.Add(1)
	var srcs []string
	for _, s := range marked {
		if n.ownsURL(s) {
			srcs = append(srcs, s)
		}
	}
	slice, err := n.passSlice(ctx)
	if err != nil {
		for _, s := range marked {
			li.dirty.Mark(s) // not read: the next sweep reads them
		}
		return 0, err
	}
	srcs = append(srcs, slice...)
	slices.Sort(srcs)
	return n.syncSources(ctx, slices.Compact(srcs))
}

// syncSources reads srcs into the index and marks those not delivered
// for the next sweep.
func (n *Node) syncSources(ctx context.Context, srcs []string) (int, error) {
	li := n.linkIdx
	sent, failed, err := li.indexer.SyncAll(ctx, srcs)
	for _, s := range failed {
		li.dirty.Mark(s) // read again next sweep
	}
	li.stats.read.Add(int64(len(srcs)))
	li.stats.sent.Add(int64(sent))
	li.stats.failed.Add(int64(len(failed)))
	if err != nil {
		return sent, fmt.Errorf("%d of %d sources not delivered, first: %w", len(failed), len(srcs), err)
	}
	return sent, nil
}

// passSlice walks the slow pass's next slice of the store and returns
// its stale sources this node owns.
func (n *Node) passSlice(ctx context.Context) ([]string, error) {
	li := n.linkIdx
	p := &li.pass
	p.mu.Lock()
	defer p.mu.Unlock()
	// The store's URLs now, if more than the last pass counted: a store
	// that grows (a new node's first days) is still walked within a day.
	total := max(p.total, int(n.store.Stats().URLs))
	budget := max((total*5/4+n.passSweeps()-1)/n.passSweeps(), minPassSlice)
	w, err := n.staleSources(ctx, p.after, budget, 0)
	if err != nil {
		return nil, err
	}
	li.stats.skipped.Add(int64(w.skipped))
	if w.done { // the end of the store: the pass is whole
		p.total = p.count + w.walked
		p.after, p.count = nil, 0
	} else {
		last := w.last
		p.after, p.count = &last, p.count+w.walked
	}
	return w.sources, nil
}

// linkVersionAdded marks the source of a version the crawl stored for
// the next link sweep (the archive's OnAdd, through versionAdded).
func (n *Node) linkVersionAdded(v archive.Version) {
	if n.linkIdx != nil {
		n.linkIdx.dirty.Mark(v.URL)
	}
}

// sweepCounters count the link sweeps since the node started.
type sweepCounters struct {
	full, partial atomic.Int64 // sweeps of every source, of the marks and a slice
	read          atomic.Int64 // sources read (their state and versions)
	skipped       atomic.Int64 // sources walked and skipped, already delivered
	sent          atomic.Int64 // records delivered
	failed        atomic.Int64 // sources whose records were not delivered
}

// LinkSweepStats counts what the link sweeps did since the node started
// (status.LinkSweepStats).
type LinkSweepStats = status.LinkSweepStats

// LinkSweepStats returns the link sweeps' counters.
func (n *Node) LinkSweepStats() LinkSweepStats {
	c := &n.linkIdx.stats
	return LinkSweepStats{Full: c.full.Load(), Partial: c.partial.Load(), Read: c.read.Load(),
		Skipped: c.skipped.Load(), Sent: c.sent.Load(), Failed: c.failed.Load()}
}
