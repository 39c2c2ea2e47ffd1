package dayclaim

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
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

// statusRing is a ring whose local ranges the test sets.
type statusRing struct {
	mu sync.Mutex
	vs []ring.VnodeStatus
}

func (r *statusRing) set(vs []ring.VnodeStatus) { r.mu.Lock(); r.vs = vs; r.mu.Unlock() }
func (r *statusRing) Status() ring.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ring.Status{Vnodes: r.vs}
}
func (r *statusRing) Owns(id.ID) bool { return true }

// TestTakeOverIdle: a range that grew counts as a change to handle
// before its event reaches Run, so a caller waiting for the node to be
// idle does not stop before the take-over has queued its URLs.
func TestTakeOverIdle(t *testing.T) {
	k := func(b byte) id.ID { var x id.ID; x[0] = b; return x }
	at := func(start byte) []ring.VnodeStatus {
		return []ring.VnodeStatus{{Node: ring.Node{ID: k(0x80)}, Range: ring.Range{Start: k(start), End: k(0x80), Known: true}}}
	}
	r := &statusRing{vs: at(0x40)}
	ch := make(chan ring.Event, 1)
	var queued atomic.Int64
	tk := &TakeOver{Ring: r, Day: func() int64 { return 1 },
		Claims: claim.New(claim.Config{Peer: "me", Ring: noVnodes{}, Transport: Transport{}}),
		Queue: func(_ context.Context, in func(string) bool) (int, error) {
			queued.Add(1)
			return 1, nil
		}}
	tk.Watch(&ring.Subscription{C: ch})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go tk.Run(ctx)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		testwait.For(t, what, 5*time.Second, ok)
	}
	waitFor("Run to start", func() bool { tk.mu.Lock(); defer tk.mu.Unlock(); return tk.rt != nil })
	if !tk.Idle() {
		t.Fatal("Idle before any change: false")
	}
	r.set(at(0x20)) // the predecessor died; its event is not sent yet
	if tk.Idle() {
		t.Fatal("Idle with a grown range not handled: true")
	}
	ch <- ring.Event{}
	waitFor("the take-over", tk.Idle)
	if n := queued.Load(); n != 1 {
		t.Errorf("take-overs queued: %d, want 1", n)
	}
	r.set(at(0x60)) // a node joined in front: nothing to take over
	if !tk.Idle() {
		t.Error("Idle after a range shrank: false")
	}
}
