package cpugate

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hold occupies one of g's workers until the returned function is called.
func hold(t *testing.T, g *Gate) (release func()) {
	t.Helper()
	busy := g.Stats().Busy
	ch := make(chan struct{})
	go g.Do(context.Background(), func() { <-ch })
	for g.Stats().Busy == busy {
		time.Sleep(time.Millisecond)
	}
	return func() { close(ch) }
}

func TestGateBoundsWorkers(t *testing.T) {
	g := New(2)
	defer g.Close()
	ctx := context.Background()
	r1, r2 := hold(t, g), hold(t, g)
	ran := make(chan error, 1)
	go func() { ran <- g.Do(ctx, func() {}) }()
	select {
	case err := <-ran:
		t.Fatalf("a third Do on a 2-worker gate returned %v while both workers are busy", err)
	case <-time.After(20 * time.Millisecond):
	}
	if n := g.Waiting(); n != 1 {
		t.Fatalf("Waiting = %d with one Do waiting for a worker, want 1", n)
	}
	r1()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if n := g.Waiting(); n != 0 {
		t.Fatalf("Waiting = %d after the waiting Do ran, want 0", n)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	r3 := hold(t, g)
	if err := g.Do(cctx, func() { t.Error("ran with a cancelled context on a full gate") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do on a full gate with a cancelled context: %v", err)
	}
	if n := g.Waiting(); n != 0 {
		t.Fatalf("Waiting = %d after a Do gave up, want 0", n)
	}
	r2()
	r3()
	for g.Stats().Busy != 0 {
		time.Sleep(time.Millisecond)
	}
}

func TestDoPanicsInCaller(t *testing.T) {
	g := New(1)
	defer g.Close()
	defer func() {
		pe, ok := recover().(*PanicError)
		if !ok || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "TestDoPanicsInCaller") {
			t.Fatalf("recovered %v, want boom with the worker's stack", pe)
		}
		if err := g.Do(context.Background(), func() {}); err != nil {
			t.Fatalf("the worker did not survive the panic: %v", err)
		}
	}()
	g.Do(context.Background(), func() { panic("boom") })
	t.Fatal("Do returned after a panic")
}

// TestDoGoexit: runtime.Goexit in f (t.Fatal does it) ends the caller's
// goroutine too, and the gate keeps its worker count.
func TestDoGoexit(t *testing.T) {
	g := New(1)
	defer g.Close()
	after := make(chan bool, 1)
	go func() {
		defer func() { after <- false }()
		g.Do(context.Background(), runtime.Goexit)
		after <- true
	}()
	if <-after {
		t.Fatal("Do returned after f called runtime.Goexit")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Do(ctx, func() {}); err != nil {
		t.Fatalf("no worker after a Goexit: %v", err)
	}
	if st := g.Stats(); st.Busy != 0 || st.Slots != 1 {
		t.Fatalf("after a Goexit: %+v", st)
	}
}

// BenchmarkDo measures a hand-off to a worker and back, f doing nothing.
func BenchmarkDo(b *testing.B) {
	g := New(1)
	defer g.Close()
	ctx := context.Background()
	for b.Loop() {
		g.Do(ctx, func() {})
	}
}

func TestClosedGateRefuses(t *testing.T) {
	g := New(1)
	release := hold(t, g)
	g.Close()
	if err := g.Do(context.Background(), func() { t.Error("ran on a closed gate") }); err == nil {
		t.Fatal("Do on a closed, busy gate returned nil")
	}
	release()
}

func TestNilGateRunsInCaller(t *testing.T) {
	var g *Gate
	n := 0
	for range 100 {
		if err := g.Do(context.Background(), func() { n++ }); err != nil {
			t.Fatal(err)
		}
	}
	g.Close()
	if n != 100 || g.Stats().Slots != 0 {
		t.Fatalf("nil gate: ran %d of 100, size %d", n, g.Stats().Slots)
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

func TestGateStats(t *testing.T) {
	waiting := make(chan struct{}, 1)
	onWait = func() { waiting <- struct{}{} }
	defer func() { onWait = func() {} }()
	g := New(1)
	defer g.Close()
	ctx := context.Background()
	release := hold(t, g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Do(ctx, func() {})
	}()
	<-waiting
	time.Sleep(20 * time.Millisecond)
	// (The first Do may have waited for the worker to start.)
	waits := g.Stats().Waits
	if st := g.Stats(); st.Slots != 1 || st.Busy != 1 || st.Entries != 1 || waits > 1 {
		t.Fatalf("one running, one waiting: %+v", st)
	}
	release()
	<-done
	for g.Stats().Busy != 0 {
		time.Sleep(time.Millisecond)
	}
	st := g.Stats()
	if st.Entries != 2 || st.Waits != waits+1 || st.WaitedSec < 0.015 || st.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Fatalf("after the wait: %+v", st)
	}
	var nilGate *Gate
	if st := nilGate.Stats(); st.Slots != 0 || st.Entries != 0 {
		t.Fatalf("nil gate: %+v", st)
	}
}
