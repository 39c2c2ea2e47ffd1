package cpugate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Gate runs page processing on a bounded number of worker goroutines,
// each locked to an OS thread of its own that runs at a lower scheduling
// priority (nice +Nice on Linux; elsewhere at the normal one). The
// goroutines that wait on the network keep the normal priority, so the
// operating system runs them at once when they wake, ahead of the
// processing. A nil *Gate runs everything in the caller.
type Gate struct {
	jobs    chan job
	stop    chan struct{}
	once    sync.Once
	n       int
	busy    atomic.Int64 // workers running a job
	waiting atomic.Int64 // Do calls waiting for a worker now
	entries atomic.Int64 // jobs run
	waits   atomic.Int64 // of them, those that found every worker busy
	waited  atomic.Int64 // nanoseconds those waited for one
}

// Nice is how much less priority the workers' threads get than the rest
// of the process (Linux's nice scale: 10 gives a thread about a tenth of
// the CPU share of a normal one when both want it).
const Nice = 10

// job is one Do: f, and where its end (or panic) is reported.
type job struct {
	f    func()
	done chan any
}

// onWait is called when a Do finds every worker busy; tests set it.
var onWait = func() {}

// Stats is a snapshot of a gate's use, for status pages.
type Stats struct {
	Slots      int     `json:"slots"`      // the bound: worker goroutines
	GOMAXPROCS int     `json:"gomaxprocs"` // processors of the process
	Busy       int     `json:"busy"`       // workers running a job now
	Entries    int64   `json:"entries"`    // jobs run so far
	Waits      int64   `json:"waits"`      // jobs that had to wait for a worker
	WaitedSec  float64 `json:"waitedSec"`  // seconds they waited in all
	LowPrio    bool    `json:"lowPrio"`    // the workers' threads run at a lower priority
}

// Stats returns the gate's use so far; the zero Stats (but GOMAXPROCS)
// for a nil gate.
func (g *Gate) Stats() Stats {
	st := Stats{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if g == nil {
		return st
	}
	st.Slots, st.Busy = g.n, int(g.busy.Load())
	st.Entries, st.Waits = g.entries.Load(), g.waits.Load()
	st.WaitedSec = time.Duration(g.waited.Load()).Seconds()
	st.LowPrio = lowPrio.Load()
	return st
}

// lowPrio records whether a worker's thread got the lower priority.
var lowPrio atomic.Bool

// New returns a gate with n workers (at least one), started at once.
// Close stops them.
func New(n int) *Gate {
	g := &Gate{jobs: make(chan job), stop: make(chan struct{}), n: max(1, n)}
	for range g.n {
		GoLowPriority(g.work)
	}
	return g
}

// work runs jobs until Close. It runs on a thread of its own at the lower
// priority (GoLowPriority).
func (g *Gate) work() {
	for {
		select {
		case j := <-g.jobs:
			g.run(j)
		case <-g.stop:
			return
		}
	}
}

// GoLowPriority runs f in a new goroutine locked for life to an OS thread
// of its own whose priority is Nice below the process's (Linux; elsewhere
// the normal one), and ends the thread with f: an unprivileged process may
// lower a thread's priority but never raise it again, so the thread serves
// nothing else. The gate's workers run so, and the archive's committer,
// whose disk waits are never urgent.
func GoLowPriority(f func()) { go runLowPriority(f, nil) }

// runLowPriority is GoLowPriority's goroutine; it closes started, if not
// nil, once it holds a thread that is not the main one.
func runLowPriority(f func(), started chan struct{}) {
	runtime.LockOSThread()
	if mainThread() {
		// The process's main thread stays at its priority (ps shows the
		// process with it): a new goroutine takes this one's place and the
		// main thread goes back to the scheduler once the new one runs —
		// on another thread, since this goroutine holds the main one
		// until then (with GOMAXPROCS 1 a replacement started at once
		// could land on it again, and again).
		next := make(chan struct{})
		go runLowPriority(f, next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	if started != nil {
		close(started)
	}
	if lowerPriority(Nice) == nil {
		lowPrio.Store(true)
	}
	f()
}

// goexit is what Do receives when f called runtime.Goexit.
type goexit struct{}

// PanicError is what Do panics with when f panicked: the value and the
// stack of the worker where it happened.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("cpugate: panic in a worker: %v\n%s", e.Value, e.Stack)
}

// run runs j.f and reports its end on j.done, however f ends. When f
// calls runtime.Goexit (t.Fatal in a test does) the worker's goroutine
// ends with it, and a new worker replaces it.
func (g *Gate) run(j job) {
	g.busy.Add(1)
	done := false
	defer func() {
		g.busy.Add(-1)
		switch p := recover(); {
		case done:
			j.done <- nil
		case p != nil:
			j.done <- &PanicError{Value: p, Stack: debug.Stack()}
		default:
			GoLowPriority(g.work)
			j.done <- goexit{}
		}
	}()
	j.f()
	done = true
}

// Do runs f on one of the gate's workers and returns when f has returned;
// a panic in f is raised again in the caller as a *PanicError, and a
// runtime.Goexit in f ends the caller's goroutine too. It returns an
// error, without running f, only when ctx ends before a worker is free.
// f must compute: hash, compress, parse, write a file. It must not wait on
// locks, syncs or the network that other processing may hold, and must
// not call Do. A hand-off costs ~20 µs of CPU (BenchmarkDo): f should be
// worth more (see DoBytes). A nil gate runs f in the caller.
func (g *Gate) Do(ctx context.Context, f func()) error {
	if g == nil {
		f()
		return nil
	}
	j := job{f: f, done: make(chan any, 1)}
	select {
	case g.jobs <- j:
	default:
		start := time.Now()
		g.waiting.Add(1)
		onWait()
		select {
		case g.jobs <- j:
			g.waiting.Add(-1)
			g.waits.Add(1)
			g.waited.Add(int64(time.Since(start)))
		case <-ctx.Done():
			g.waiting.Add(-1)
			return fmt.Errorf("cpugate: %w", ctx.Err())
		case <-g.stop:
			g.waiting.Add(-1)
			return errors.New("cpugate: gate closed")
		}
	}
	g.entries.Add(1)
	switch p := (<-j.done).(type) {
	case nil:
	case goexit:
		runtime.Goexit()
	default:
		panic(p)
	}
	return nil
}

// Waiting returns how many Do calls are waiting for a worker now: more
// than zero means the processing has fallen behind what is asked of it.
// A nil gate has none.
func (g *Gate) Waiting() int {
	if g == nil {
		return 0
	}
	return int(g.waiting.Load())
}

// InlineBytes is the size of input below which DoBytes runs f in the
// caller: hashing or sniffing that little costs less than a hand-off.
const InlineBytes = 32 << 10

// DoBytes runs f, which works through n bytes, in the caller when n is
// below InlineBytes and with Do otherwise.
func (g *Gate) DoBytes(ctx context.Context, n int, f func()) error {
	if n < InlineBytes {
		f()
		return nil
	}
	return g.Do(ctx, f)
}

// Close stops the workers once the jobs they run have ended; a Do waiting
// for a worker then fails. The shared gate is never closed.
func (g *Gate) Close() {
	if g != nil {
		g.once.Do(func() { close(g.stop) })
	}
}

var (
	sharedOnce sync.Once
	shared     *Gate
)

// Shared returns the process's gate for page processing, sized at the
// first call: GOMAXPROCS-1 workers (at least one), so that a processor is
// always left for goroutines woken by the network. It is
// one gate per process because processors are: the nodes that one process
// runs (tests, benchmarks) share it.
func Shared() *Gate {
	sharedOnce.Do(func() { shared = New(runtime.GOMAXPROCS(0) - 1) })
	return shared
}
