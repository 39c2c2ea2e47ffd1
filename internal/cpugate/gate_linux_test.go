package cpugate

import (
	"context"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDoRunsOnLowPriorityThread: f runs on a thread whose nice value is
// Nice above the caller's (Linux), and the caller's is untouched.
func TestDoRunsOnLowPriorityThread(t *testing.T) {
	nice := func() int {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		if err != nil {
			t.Fatal(err)
		}
		return 20 - p
	}
	before := nice()
	g := New(1)
	defer g.Close()
	var inside int
	if err := g.Do(context.Background(), func() { inside = nice() }); err != nil {
		t.Fatal(err)
	}
	if want := min(19, before+Nice); inside != want || !g.Stats().LowPrio {
		t.Fatalf("nice %d inside Do, want %d (caller %d); stats %+v", inside, want, before, g.Stats())
	}
	if after := nice(); after != before {
		t.Fatalf("the caller's nice changed from %d to %d", before, after)
	}
}

// TestGoLowPriority: f runs on a thread with Nice more, never the main
// one, and the thread ends with f (threads the scheduler hands out later
// keep the normal priority).
func TestGoLowPriority(t *testing.T) {
	nice := func() int {
		p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		if err != nil {
			t.Error(err)
		}
		return 20 - p
	}
	runtime.LockOSThread()
	before := nice()
	runtime.UnlockOSThread()
	for range 3 {
		got := make(chan [2]int, 1)
		GoLowPriority(func() { got <- [2]int{nice(), unix.Gettid()} })
		r := <-got
		if want := min(19, before+Nice); r[0] != want || r[1] == os.Getpid() {
			t.Fatalf("nice %d in f (thread %d, main %d), want %d on another thread", r[0], r[1], os.Getpid(), want)
		}
	}
	for range 20 {
		runtime.LockOSThread()
		n := nice()
		runtime.UnlockOSThread()
		if n != before {
			t.Fatalf("a thread at nice %d after f ended, want %d", n, before)
		}
		runtime.Gosched()
	}
}
