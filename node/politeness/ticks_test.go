package politeness

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/racebuild"
)

// TestTickSetModel checks tickSet against a slice of bools under random
// adds, drops and clears, across word boundaries.
func TestTickSetModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var ts tickSet
	var model []bool
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 6:
			i := r.Int64N(maxScheduleTicks + 1)
			ts.add(i)
			for int64(len(model)) <= i {
				model = append(model, false)
			}
			model[i] = true
		case op < 9:
			n := r.Int64N(300)
			if r.IntN(4) == 0 {
				n = r.Int64N(maxScheduleTicks + 200)
			}
			ts.drop(n)
			if n >= int64(len(model)) {
				model = model[:0]
			} else {
				model = append(model[:0], model[n:]...)
			}
		default:
			ts = ts.cleared()
			model = model[:0]
		}
		for _, i := range []int64{-1, 0, 1, 63, 64, 65, r.Int64N(maxScheduleTicks + 100)} {
			want := i >= 0 && i < int64(len(model)) && model[i]
			if got := ts.has(i); got != want {
				t.Fatalf("step %d: has(%d) = %v, want %v", step, i, got, want)
			}
		}
	}
	if len(ts.w) > maxScheduleTicks/64+1 {
		t.Fatalf("%d words, want at most %d", len(ts.w), maxScheduleTicks/64+1)
	}
}

// TestSlotAllocatorNoGrowth: a busy host's schedule at a microsecond
// interval, leased by a requester whose slots are a millisecond apart (the
// scale benchmark's unlimited host rate), allocates only the grant itself.
func TestSlotAllocatorNoGrowth(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts: the race detector's instrumentation allocates")
	}
	clk := newAllocClock()
	a := newSlotAllocator(clk.Now)
	const iv, sp = time.Microsecond, time.Millisecond
	a.allocate("h", "", maxLeaseSlots, iv, sp) // the host's first schedule
	allocs := testing.AllocsPerRun(200, func() {
		clk.Advance(20 * time.Millisecond) // past every slot: a new grid
		if g := a.allocate("h", "", maxLeaseSlots, iv, sp); len(g.Delays) == 0 {
			t.Fatal("no slot granted")
		}
	})
	// The grant's Delays and the requester's held slots (64 KB and 24
	// allocations a lease when the grid was a slice of bools).
	if allocs > 3 {
		t.Fatalf("%.1f allocations a lease, want at most 3", allocs)
	}
}

// BenchmarkSlotAllocate leases slots a millisecond apart at a microsecond
// interval (16 of them, the horizon's worth), as the scale benchmark's
// unlimited host rate does: "next" when the next lease continues the grid
// (its last slot is due), "new" when every slot has passed and a new grid
// starts (go test ./node/politeness -run '^$' -bench SlotAllocate
// -benchmem).
func BenchmarkSlotAllocate(b *testing.B) {
	for _, c := range []struct {
		name string
		step time.Duration
	}{{"next", 16 * time.Millisecond}, {"new", 20 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) {
			clk := newAllocClock()
			a := newSlotAllocator(clk.Now)
			b.ReportAllocs()
			for b.Loop() {
				clk.Advance(c.step)
				a.allocate("h", "", maxLeaseSlots, time.Microsecond, time.Millisecond)
			}
		})
	}
}
