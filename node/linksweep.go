package node

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/herod-archive/herod/archive"
)

// Which sources a link sweep reads. Reading a source costs its indexer
// state and its version list even when nothing changed, so a sweep that
// read every URL of the store was O(store) every LinkSweep (at 300 K
// URLs a fifth of a revisit day's CPU). A sweep now reads:
//
//   - the marked sources (links.Dirty): those the crawl stored a version
//     of since the last sweep (the archive's OnAdd, versionAdded) and
//     those whose records were not delivered;
//   - a slice of the slow pass, a walk of the store's URLs in order cut
//     into the sweeps of one crawl day, which repairs whatever a mark
//     missed (a version imported, a mark lost): every source is read at
//     least once a DayLength plus one sweep, while the store grows by
//     less than a quarter within a day (the slice is 5/4 of its share);
//   - every source, when the marks are unknown: the first sweep after a
//     start, after more marks than links.Dirty holds, after a range
//     this node owns grew (the sources it took over were imported).

// slowPass is the slow pass's place: the last URL it read, and the
// URLs of the store counted by the last whole walk.
type slowPass struct {
	mu    sync.Mutex
	after string // the walk goes on after it ("": from the first)
	count int    // URLs walked in the pass so far
	total int    // URLs of the last whole pass (or full sweep)
}

// minPassSlice is the least a sweep's slice of the slow pass reads.
const minPassSlice = 256

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

// sweepSources returns the sources this node owns that the next sweep
// reads, sorted.
func (n *Node) sweepSources(ctx context.Context) ([]string, error) {
	li := n.linkIdx
	marked, full := li.dirty.Take()
	keep := func(all []string) []string {
		for _, s := range all {
			li.dirty.Mark(s) // not read: the next sweep reads them
		}
		return nil
	}
	var srcs []string
	if full {
		total := 0
		err := n.store.URLs(ctx, archive.Query{}, func(u string) error {
			total++
			if n.ownsURL(u) {
				srcs = append(srcs, u)
			}
			return nil
		})
		if err != nil {
			li.dirty.MarkAll()
			return nil, err
		}
		li.pass.mu.Lock()
		li.pass.after, li.pass.count, li.pass.total = "", 0, total
		li.pass.mu.Unlock()
		return srcs, nil
	}
	for _, s := range marked {
		if n.ownsURL(s) {
			srcs = append(srcs, s)
		}
	}
	slice, err := n.passSlice(ctx)
	if err != nil {
		return keep(marked), err
	}
	srcs = append(srcs, slice...)
	slices.Sort(srcs)
	return slices.Compact(srcs), nil
}

// passSlice walks the slow pass's next slice of the store and returns
// the URLs of it this node owns.
func (n *Node) passSlice(ctx context.Context) ([]string, error) {
	p := &n.linkIdx.pass
	p.mu.Lock()
	defer p.mu.Unlock()
	// The store's URLs now, if more than the last pass counted: a store
	// that grows (a new node's first days) is still walked within a day.
	total := max(p.total, int(n.store.Stats().URLs))
	budget := max((total*5/4+n.passSweeps()-1)/n.passSweeps(), minPassSlice)
	var out []string
	walked, last := 0, p.after
	err := n.store.URLsAfter(ctx, p.after, func(u string) error {
		if walked == budget {
			return errSliceDone
		}
		walked++
		last = u
		if n.ownsURL(u) {
			out = append(out, u)
		}
		return nil
	})
	switch {
	case errors.Is(err, errSliceDone):
		p.after, p.count = last, p.count+walked
	case err != nil:
		return nil, err
	default: // the end of the store: the pass is whole
		p.total = p.count + walked
		p.after, p.count = "", 0
	}
	return out, nil
}

// linkVersionAdded marks the source of a version the crawl stored for
// the next link sweep (the archive's OnAdd, through versionAdded).
func (n *Node) linkVersionAdded(v archive.Version) {
	if n.linkIdx != nil {
		n.linkIdx.dirty.Mark(v.URL)
	}
}
