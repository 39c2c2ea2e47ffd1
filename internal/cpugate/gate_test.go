package cpugate

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestGateBoundsHolders(t *testing.T) {
	g := New(2)
	ctx := context.Background()
	for range 2 {
		if err := g.Enter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	entered := make(chan error, 1)
	go func() { entered <- g.Enter(ctx) }()
	select {
	case err := <-entered:
		t.Fatalf("a third Enter on a 2-slot gate returned %v while both slots are held", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.Leave()
	if err := <-entered; err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Enter(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter on a full gate with a cancelled context: %v", err)
	}
	g.Leave()
	g.Leave()
	if len(g.slots) != 0 {
		t.Fatalf("%d slots held after every Leave", len(g.slots))
	}
}

func TestNilGateAdmitsEveryone(t *testing.T) {
	var g *Gate
	for range 100 {
		if err := g.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	g.Leave()
	if g.Stats().Slots != 0 {
		t.Fatalf("nil gate size %d", g.Stats().Slots)
	}
}

func TestSharedLeavesOneProcessor(t *testing.T) {
	want := max(1, runtime.GOMAXPROCS(0)-1)
	if got := Shared().Stats().Slots; got != want || Shared() != Shared() {
		t.Fatalf("Shared: %d slots (want %d), same gate each call: %v", got, want, Shared() == Shared())
	}
	if New(0).Stats().Slots != 1 {
		t.Fatal("New(0) must have one slot")
	}
}

// TestReserveProcessor: one processor beyond the CPUs, once however often
// it is called, and none when the environment sets GOMAXPROCS.
func TestReserveProcessor(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	want := min(before, runtime.NumCPU()) + 1
	for range 2 {
		if got := ReserveProcessor(); got != want || runtime.GOMAXPROCS(0) != want {
			t.Fatalf("ReserveProcessor = %d, GOMAXPROCS %d; want %d", got, runtime.GOMAXPROCS(0), want)
		}
	}
	runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	if got := ReserveProcessor(); got != before || runtime.GOMAXPROCS(0) != before {
		t.Fatalf("with GOMAXPROCS=%d in the environment: %d, GOMAXPROCS %d", before, got, runtime.GOMAXPROCS(0))
	}
}

func TestGateStats(t *testing.T) {
	waiting := make(chan struct{}, 1)
	onWait = func() { waiting <- struct{}{} }
	defer func() { onWait = func() {} }()
	g := New(1)
	ctx := context.Background()
	if err := g.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := g.Enter(ctx); err == nil {
			g.Leave()
		}
	}()
	<-waiting
	time.Sleep(20 * time.Millisecond)
	if st := g.Stats(); st.Slots != 1 || st.Busy != 1 || st.Entries != 1 || st.Waits != 0 {
		t.Fatalf("one holder, one waiting: %+v", st)
	}
	g.Leave()
	<-done
	st := g.Stats()
	if st.Entries != 2 || st.Waits != 1 || st.WaitedSec < 0.015 || st.Busy != 0 || st.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Fatalf("after the wait: %+v", st)
	}
	var nilGate *Gate
	if st := nilGate.Stats(); st.Slots != 0 || st.Entries != 0 {
		t.Fatalf("nil gate: %+v", st)
	}
}
