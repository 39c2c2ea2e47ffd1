package cpugate

import (
	"context"
	"fmt"
	"os"
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
// slots (at least one), as read at the first call, so that one processor
// is always left for goroutines woken by the network. It is one gate per
// process because processors are: the nodes that one process runs (tests,
// benchmarks) share it. A program that wants processing to use every CPU
// calls ReserveProcessor before the first call.
func Shared() *Gate {
	sharedOnce.Do(func() { shared = New(runtime.GOMAXPROCS(0) - 1) })
	return shared
}

// ReserveProcessor adds one processor (GOMAXPROCS) beyond the CPUs, unless
// the GOMAXPROCS environment variable sets the count, and returns the
// count in force. Called before the first Shared, it gives the processing
// gate a slot per CPU while a processor stays free for the network: the
// operating system, which preempts at once for a woken thread, then shares
// the CPUs between processing and the fetches, where Go's scheduler would
// let a woken goroutine wait for a processor (docs/crawl.md). It also
// stops the runtime from adjusting GOMAXPROCS to a changed CPU limit.
func ReserveProcessor() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	n := min(runtime.GOMAXPROCS(0), runtime.NumCPU()) + 1
	runtime.GOMAXPROCS(n)
	return n
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
