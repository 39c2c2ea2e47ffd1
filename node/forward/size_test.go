package forward

import (
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// evenRing returns the status of one local virtual server in a ring of n
// evenly spaced ones, with m successors.
func evenRing(n, m int) ring.Status {
	at := func(i int) ring.Node {
		var x id.ID
		// i/n of the circle: the top byte carries it for n dividing 256.
		x[0] = byte(i * 256 / n)
		return ring.Node{ID: x}
	}
	v := ring.VnodeStatus{Node: at(0)}
	for i := 1; i <= m; i++ {
		v.Successors = append(v.Successors, at(i))
	}
	return ring.Status{Vnodes: []ring.VnodeStatus{v}}
}

func TestEstimateRingSize(t *testing.T) {
	for _, c := range []struct{ n, m, want int }{{16, 4, 16}, {64, 8, 64}, {256, 3, 256}} {
		if got := EstimateRingSize(evenRing(c.n, c.m)); got != c.want {
			t.Errorf("ring of %d, %d successors: %d", c.n, c.m, got)
		}
	}
	// No successors: the local virtual servers' number.
	st := ring.Status{Vnodes: make([]ring.VnodeStatus, 3)}
	if got := EstimateRingSize(st); got != 3 {
		t.Errorf("no successors: %d, want 3", got)
	}
}

func TestSizeEstimateCaches(t *testing.T) {
	calls := 0
	e := &SizeEstimate{Status: func() ring.Status { calls++; return evenRing(16, 4) }}
	for range 3 {
		if got := e.RingSize(); got != 16 {
			t.Fatalf("RingSize = %d, want 16", got)
		}
	}
	if calls != 1 {
		t.Fatalf("status read %d times within a second, want 1", calls)
	}
}
