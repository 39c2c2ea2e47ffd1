package rank

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// chainGraph is n pages of about 80-byte URLs, each linking to the next
// links pages.
func chainGraph(n, links int) map[string][]string {
	u := func(i int) string {
		return fmt.Sprintf("http://host%d.example/section/%s/page-%d.html", i%50, strings.Repeat("x", 20), i)
	}
	g := map[string][]string{}
	for i := range n {
		ls := make([]string, links)
		for k := range ls {
			ls[k] = u((i + k + 1) % n)
		}
		g[u(i)] = ls
	}
	return g
}

// TestRunTooLarge: a graph past MaxBytes fails its run with ErrTooLarge
// at prepare, and so do registrations past it; a run within it succeeds.
func TestRunTooLarge(t *testing.T) {
	g := chainGraph(400, 10)
	var need int64
	for s, ls := range g {
		need += PageBytes(s, ls)
	}
	m, members, _ := newMemRing(t, 2, 2, g)
	for _, e := range m.engines {
		e.MaxBytes = need / 4 // each member holds about half the pages
	}
	_, err := (&Coordinator{Transport: m}).Run(context.Background(), members, Options{Iterations: 3, Tolerance: -1})
	if !errors.Is(err, ErrTooLarge) && (err == nil || !strings.Contains(err.Error(), ErrTooLarge.Error())) {
		t.Fatalf("run of a graph over the bound: %v, want ErrTooLarge", err)
	}
	for _, e := range m.engines {
		e.MaxBytes = need * 4
	}
	if _, err := (&Coordinator{Transport: m}).Run(context.Background(), members, Options{Iterations: 3, Tolerance: -1}); err != nil {
		t.Fatalf("run within the bound: %v", err)
	}

	// Registrations alone: a member that registers vertices past the
	// bound is refused, whatever the graph.
	e := &Engine{Self: ring.Contact{Peer: "p"}, MaxBytes: 10_000,
		Graph: func(context.Context, int64, int64) (map[string][]string, error) { return nil, nil }}
	h := Header{Op: OpRegister, Run: "r1"}
	var refused error
	for i := 0; i < 100 && refused == nil; i++ {
		urls := []string{fmt.Sprintf("http://flood.example/%d/%s", i, strings.Repeat("y", 60))}
		h.Count = len(urls)
		_, _, refused = e.HandleRemote(context.Background(), "flood", h, encodeURLs(urls))
	}
	if !errors.Is(refused, ErrTooLarge) {
		t.Fatalf("registrations past the bound: %v, want ErrTooLarge", refused)
	}
	if got := len(e.run.urls); int64(got)*(vertexCost+80) > 10_000+vertexCost+100 {
		t.Fatalf("%d vertices held past a bound of 10,000 bytes", got)
	}
}

// TestPrepareBusy: a prepare while another runs is refused; a member's
// prepare comes at most once every PrepareGap, which does not hold up
// another member's; a run under way is driven by its coordinator only
// and is not replaced by another's run.
func TestPrepareBusy(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	e := &Engine{Self: ring.Contact{Peer: "self"}, PrepareGap: time.Hour,
		Locate: func(context.Context, id.ID) (ring.Node, error) {
			return ring.Node{Contact: ring.Contact{Peer: "self"}}, nil
		},
		Graph: func(ctx context.Context, _ int64, _ int64) (map[string][]string, error) {
			if calls.Add(1) == 1 {
				<-release
			}
			return map[string][]string{"http://a.example/": nil}, nil
		}}
	var wg sync.WaitGroup
	var first error
	wg.Go(func() { _, _, first = e.Handle(context.Background(), Header{Op: OpPrepare, Run: "a"}, nil) })
	for calls.Load() == 0 {
		runtime.Gosched()
	}
	if _, _, err := e.Handle(context.Background(), Header{Op: OpPrepare, Run: "b"}, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("a prepare during another: %v, want ErrBusy", err)
	}
	close(release)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	idle := func() {
		e.mu.Lock()
		e.run.lastUse = time.Now().Add(-time.Hour)
		e.mu.Unlock()
	}
	idle()
	ctx := context.Background()
	if _, _, err := e.HandleRemote(ctx, "m1", Header{Op: OpPrepare, Run: "c"}, nil); err != nil {
		t.Fatalf("a member's first prepare: %v", err)
	}
	idle()
	if _, _, err := e.HandleRemote(ctx, "m1", Header{Op: OpPrepare, Run: "d"}, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("the member's second prepare within the gap: %v, want ErrBusy", err)
	}
	if _, _, err := e.HandleRemote(ctx, "m2", Header{Op: OpPrepare, Run: "e"}, nil); err != nil {
		t.Fatalf("another member's prepare within the first's gap: %v", err)
	}

	// Run e is m2's and under way: only m2 drives it, and no other run
	// replaces it.
	if _, _, err := e.HandleRemote(ctx, "m1", Header{Op: OpCount, Run: "e"}, nil); err == nil {
		t.Fatal("another member counted m2's run")
	}
	if _, _, err := e.HandleRemote(ctx, "m3", Header{Op: OpPrepare, Run: "y"}, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("a prepare of another run while m2's is under way: %v, want ErrBusy", err)
	}
	reg := encodeURLs([]string{"http://x.example/"})
	if _, _, err := e.HandleRemote(ctx, "m1", Header{Op: OpRegister, Run: "x", Count: 1}, reg); !errors.Is(err, ErrBusy) {
		t.Fatalf("a registration for another run while m2's is under way: %v, want ErrBusy", err)
	}
	if _, _, err := e.HandleRemote(ctx, "m1", Header{Op: OpRegister, Run: "e", Count: 1}, reg); err != nil {
		t.Fatalf("a registration for m2's run: %v", err)
	}
	if rep, _, err := e.HandleRemote(ctx, "m2", Header{Op: OpCount, Run: "e"}, nil); err != nil || rep.Vertices != 2 {
		t.Fatalf("m2 counts its run: %d vertices, %v", rep.Vertices, err)
	}
	if e.run.id != "e" || e.run.coord != "m2" {
		t.Fatalf("current run %s of %s, want e of m2", e.run.id, e.run.coord)
	}
}

// TestRunMemory measures the heap a one-member run of a chain graph
// holds at its peak and after it (the run state an Engine keeps), per
// byte MaxBytes counts (docs/links.md).
func TestRunMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures heap")
	}
	g := chainGraph(20_000, 20)
	var counted int64
	for s, ls := range g {
		counted += PageBytes(s, ls)
	}
	m, members, _ := newMemRing(t, 1, 1, g)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
		}
	}()
	if _, err := (&Coordinator{Transport: m}).Run(context.Background(), members, Options{Iterations: 3, Tolerance: -1}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	p := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("graph of %d pages, %d links: counted %d bytes (%.0f a page); heap at the peak +%d (%.2fx), held after the run +%d (%.2fx)",
		len(g), 20*len(g), counted, float64(counted)/float64(len(g)), p, float64(p)/float64(counted), held, float64(held)/float64(counted))
	if p > 4*counted {
		t.Errorf("a run's peak heap is %.2fx what MaxBytes counts; docs/links.md says at most 3x", float64(p)/float64(counted))
	}
}
