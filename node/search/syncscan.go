package search

import (
	"context"
	"sort"

	"github.com/herod-archive/herod/internal/id"
	fts "github.com/herod-archive/herod/search"
)

// Scans of several ranges. Store.Range reads the postings of one ring
// interval (it walks the term names and decodes only the terms whose key
// lies in it), so the ranges a sync request names are read as few
// intervals as cover them and nothing more: the runs of adjacent ranges
// (a split range's parts), each read alone while there are at most
// maxScanRuns of them; else the interval from the first range's start to
// the last one's end when the ranges come in ring order (the differing
// parts of one range); else, for ranges in no order (only a member's
// odd request), the whole circle. A posting's range is found by binary
// search over the ranges of its interval.

// maxScanRuns bounds the separate reads of one scan: each walks the
// store's term names once.
const maxScanRuns = 8

// scanPlan is one interval read by a scan and the ranges in it.
type scanPlan struct {
	from, to id.ID
	first    int        // index in the scan's ranges of rs[0]
	rs       []KeyRange // in ring order from from, when ordered
	ordered  bool
}

// after reports whether x comes after y going clockwise from h, with h
// itself the end of the circle (a range's end equal to h closes it).
func after(h, x, y id.ID) bool {
	xl, yl := x.Cmp(h) > 0, y.Cmp(h) > 0 // on the first lap from h
	if xl != yl {
		return yl
	}
	return x.Cmp(y) > 0
}

// inOrder reports whether rs (at least one) lie one after the other
// clockwise from rs[0].From without overlapping or wrapping past it.
func inOrder(rs []KeyRange) bool {
	h := rs[0].From
	if len(rs) == 1 {
		return true
	}
	if rs[0].From == rs[0].To {
		return false
	}
	for i := 1; i < len(rs); i++ {
		r := rs[i]
		if r.From == h || r.From == r.To || after(h, rs[i-1].To, r.From) || !after(h, r.To, r.From) {
			return false
		}
	}
	return true
}

// plans returns the intervals a scan of rs reads.
func plans(rs []KeyRange) []scanPlan {
	var runs []scanPlan
	start := 0
	for i := 1; i <= len(rs); i++ {
		if i < len(rs) && rs[i].From == rs[i-1].To && rs[i].From != rs[start].From {
			continue
		}
		run := rs[start:i]
		runs = append(runs, scanPlan{from: run[0].From, to: run[len(run)-1].To, first: start, rs: run, ordered: inOrder(run)})
		start = i
	}
	if len(runs) <= maxScanRuns && allOrdered(runs) {
		return runs
	}
	if inOrder(rs) {
		return []scanPlan{{from: rs[0].From, to: rs[len(rs)-1].To, rs: rs, ordered: true}}
	}
	return []scanPlan{{from: rs[0].From, to: rs[0].From, rs: rs}}
}

func allOrdered(ps []scanPlan) bool {
	for _, p := range ps {
		if !p.ordered {
			return false
		}
	}
	return true
}

// index returns the index (in the scan's ranges) of the range of p that
// holds key k, or -1.
func (p *scanPlan) index(k id.ID) int {
	if !p.ordered {
		for i, r := range p.rs {
			if r.Has(k) {
				return p.first + i
			}
		}
		return -1
	}
	h := p.from
	i := sort.Search(len(p.rs), func(i int) bool { return !after(h, k, p.rs[i].To) })
	if i < len(p.rs) && p.rs[i].Has(k) {
		return p.first + i
	}
	return -1
}

// scan calls fn with every stored posting whose term key lies in one of
// rs (disjoint ranges) and that range's index, reading as little of the
// store as the plans allow.
func (sv *Service) scan(ctx context.Context, rs []KeyRange, fn func(i int, p fts.Posting)) error {
	for _, pl := range plans(rs) {
		last, idx := "", -1
		started := false
		err := sv.Store.Range(ctx, pl.from, pl.to, func(p fts.Posting) error {
			if !started || p.Term != last {
				started, last = true, p.Term
				idx = pl.index(fts.TermKey(p.Term))
			}
			if idx >= 0 {
				fn(idx, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
