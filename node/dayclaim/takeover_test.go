package dayclaim

import (
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestGained: the ranges a local virtual server grew by at the front,
// across the ring states a take-over goes through.
func TestGained(t *testing.T) {
	k := func(b byte) id.ID { var x id.ID; x[0] = b; return x }
	rg := func(a, b byte) ring.Range { return ring.Range{Start: k(a), End: k(b), Known: true} }
	at := func(r ring.Range) []ring.VnodeStatus {
		return []ring.VnodeStatus{{Node: ring.Node{ID: k(0x80)}, Range: r}}
	}
	for _, tc := range []struct {
		name   string
		states [][]ring.VnodeStatus
		want   []ring.Range
	}{
		{"predecessor died", [][]ring.VnodeStatus{at(rg(0x40, 0x80)), at(rg(0x20, 0x80))}, []ring.Range{rg(0x20, 0x40)}},
		{"predecessor forgotten, then the next one learnt",
			[][]ring.VnodeStatus{at(rg(0x40, 0x80)), at(ring.Range{}), at(rg(0x20, 0x80))}, []ring.Range{rg(0x20, 0x40)}},
		{"across zero", [][]ring.VnodeStatus{at(rg(0x10, 0x80)), at(rg(0xf0, 0x80))}, []ring.Range{rg(0xf0, 0x10)}},
		{"a node joined in front", [][]ring.VnodeStatus{at(rg(0x20, 0x80)), at(rg(0x40, 0x80))}, nil},
		{"first known (own join)", [][]ring.VnodeStatus{at(ring.Range{}), at(rg(0x20, 0x80))}, nil},
		{"unchanged", [][]ring.VnodeStatus{at(rg(0x20, 0x80)), at(rg(0x20, 0x80))}, nil},
		{"virtual server gone, then back: first known again",
			[][]ring.VnodeStatus{at(rg(0x40, 0x80)), nil, at(rg(0x20, 0x80))}, nil},
	} {
		rt := rangeTracker{}
		var got []ring.Range
		for _, st := range tc.states {
			got = rt.update(st)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: gained %+v; want %+v", tc.name, got, tc.want)
		}
	}
}
