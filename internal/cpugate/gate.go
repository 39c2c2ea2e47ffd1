package cpugate

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Gate admits a bounded number of goroutines at once. A nil *Gate admits
// everyone: Enter returns nil and Leave does nothing.
type Gate struct {
	slots   chan struct{}
	entries atomic.Int64 // successful Enters
	waits   atomic.Int64 // of them, those that found every slot taken
	waited  atomic.Int64 // nanoseconds those waited
}

// onWait is called when an Enter finds every slot taken; tests set it.
var onWait = func() {}

// Stats is a snapshot of a gate's use, for status pages.
type Stats struct {
	Slots      int     `json:"slots"`      // the bound
	GOMAXPROCS int     `json:"gomaxprocs"` // processors of the process
	Busy       int     `json:"busy"`       // slots held now
	Entries    int64   `json:"entries"`    // successful Enters so far
	Waits      int64   `json:"waits"`      // Enters that had to wait for a slot
	WaitedSec  float64 `json:"waitedSec"`  // seconds they waited in all
}

// Stats returns the gate's use so far; the zero Stats (but GOMAXPROCS)
// for a nil gate.
func (g *Gate) Stats() Stats {
	st := Stats{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if g == nil {
		return st
	}
	st.Slots, st.Busy = cap(g.slots), len(g.slots)
	st.Entries, st.Waits = g.entries.Load(), g.waits.Load()
	st.WaitedSec = time.Duration(g.waited.Load()).Seconds()
	return st
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

// Enter waits for a slot. It returns an error, holding nothing, only when
// ctx ends first. Every successful Enter must be paired with one Leave.
func (g *Gate) Enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g.slots <- struct{}{}:
		g.entries.Add(1)
		return nil
	default:
	}
	start := time.Now()
	onWait()
	select {
	case g.slots <- struct{}{}:
		g.entries.Add(1)
		g.waits.Add(1)
		g.waited.Add(int64(time.Since(start)))
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
