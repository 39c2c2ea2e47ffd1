package cpugate

import (
	"context"
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
