package cpugate

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// Gate admits a bounded number of goroutines at once. A nil *Gate admits
// everyone: Enter returns nil and Leave does nothing.
type Gate struct {
	slots chan struct{}
}

// New returns a gate with n slots (at least one).
func New(n int) *Gate {
	return &Gate{slots: make(chan struct{}, max(1, n))}
}

var (
	sharedOnce sync.Once
	shared     *Gate
)

// Shared returns the process's gate for page processing: GOMAXPROCS-1
// slots (at least one), as read at the first call. It is one gate per
// process because processors are: the nodes that one process runs (tests,
// benchmarks) share it.
func Shared() *Gate {
	sharedOnce.Do(func() { shared = New(runtime.GOMAXPROCS(0) - 1) })
	return shared
}

// Size reports the gate's slots; 0 for a nil gate (no bound).
func (g *Gate) Size() int {
	if g == nil {
		return 0
	}
	return cap(g.slots)
}

// Enter waits for a slot. It returns an error, holding nothing, only when
// ctx ends first. Every successful Enter must be paired with one Leave.
func (g *Gate) Enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cpugate: %w", ctx.Err())
	}
}

// Leave gives back the slot taken by Enter.
func (g *Gate) Leave() {
	if g == nil {
		return
	}
	<-g.slots
}
