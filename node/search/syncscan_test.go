package search

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// TestScanPlans: whatever ranges a scan is asked for (a split range's
// parts, some of them, a node's ranges around the circle, ranges in no
// order, the whole circle), every key of one of them is read once, by a
// plan whose interval holds it and that names its range, and no key of
// none is given a range.
func TestScanPlans(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	randID := func() id.ID {
		var x id.ID
		for i := range x {
			x[i] = byte(rnd.UintN(256))
		}
		return x
	}
	sortedIDs := func(n int) []id.ID {
		xs := make([]id.ID, n)
		for i := range xs {
			xs[i] = randID()
		}
		slices.SortFunc(xs, func(a, b id.ID) int { return a.Cmp(b) })
		return xs
	}
	circle := func(n int) []KeyRange { // n ranges that tile the circle, starting anywhere
		xs := sortedIDs(n)
		var rs []KeyRange
		for i := range xs {
			rs = append(rs, KeyRange{From: xs[(i+n-1)%n], To: xs[i]})
		}
		r := rnd.IntN(n)
		return append(rs[r:], rs[:r]...)
	}
	var cases [][]KeyRange
	for range 20 {
		top := KeyRange{From: randID(), To: randID()}
		parts := split(top, syncSplit)
		var some []KeyRange
		for _, p := range parts {
			if rnd.IntN(3) == 0 {
				some = append(some, split(p, syncSplit)...)
			}
		}
		if len(some) == 0 {
			some = parts[:1]
		}
		tiles := circle(16)
		var vnodes []KeyRange
		for i, r := range tiles {
			if i%4 == 0 {
				vnodes = append(vnodes, r)
			}
		}
		shuffled := slices.Clone(vnodes)
		rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		cases = append(cases, []KeyRange{top}, parts, some, tiles, vnodes, shuffled)
	}
	x := randID()
	cases = append(cases, []KeyRange{{From: x, To: x}})
	for ci, rs := range cases {
		pls := plans(rs)
		keys := make([]id.ID, 0, 2000+3*len(rs))
		for range 2000 {
			keys = append(keys, randID())
		}
		for _, r := range rs {
			keys = append(keys, r.To, r.From, r.From.AddPow2(0))
		}
		for _, k := range keys {
			want := -1
			for i, r := range rs {
				if r.Has(k) {
					want = i
					break
				}
			}
			var got []int
			for _, pl := range pls {
				if id.InHalfOpen(k, pl.from, pl.to) {
					if i := pl.index(k); i >= 0 {
						got = append(got, i)
					}
				}
			}
			switch {
			case want < 0 && len(got) > 0:
				t.Fatalf("case %d (%d ranges, %d plans): key %s in no range given range %v", ci, len(rs), len(pls), k.Short(), got)
			case want >= 0 && (len(got) != 1 || got[0] != want):
				t.Fatalf("case %d (%d ranges, %d plans): key %s of range %d read as %v", ci, len(rs), len(pls), k.Short(), want, got)
			}
		}
	}
	// A split range's parts are one read of the range itself; a node's
	// ranges one read each.
	top := KeyRange{From: randID(), To: randID()}
	if pls := plans(split(top, syncSplit)); len(pls) != 1 || pls[0].from != top.From || pls[0].to != top.To {
		t.Errorf("a split range's parts: %d plans", len(pls))
	}
	tiles := circle(16)
	vs := []KeyRange{tiles[0], tiles[4], tiles[8], tiles[12]}
	if pls := plans(vs); len(pls) != 4 {
		t.Errorf("4 ranges apart: %d plans, want 4", len(pls))
	}
}
