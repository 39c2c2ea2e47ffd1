package links

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestHeldBoundNeverBelow: counts added to crowded counters (more
// targets than a few slots would hold apart) leave every target's bound
// at or above its true count.
func TestHeldBoundNeverBelow(t *testing.T) {
	h := newHeldBound()
	truth := map[string]int{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200_000 {
		target := fmt.Sprintf("http://h%d.test/p%d", rng.IntN(50), rng.IntN(20_000))
		n := rng.IntN(3)
		h.add(target, n)
		truth[target] += n
	}
	for target, n := range truth {
		if b := h.bound(target); b < n {
			t.Fatalf("%s: bound %d below %d held", target, b, n)
		}
	}
	// Saturation: a bound never wraps.
	h.add("http://big.test/", 70_000)
	h.add("http://big.test/", 70_000)
	if b := h.bound("http://big.test/"); b != 65535 {
		t.Fatalf("saturated bound %d, want 65535", b)
	}
}

// TestHeldCountWithPuts: records stored while Open's count walks the
// index (from a snapshot taken before them) are in the bound when the
// count ends, so no target can be read by key past its cap.
func TestHeldCountWithPuts(t *testing.T) {
	ctx := context.Background()
	const perTarget = 4
	dir := t.TempDir()
	x, err := Open(dir, Config{PerTarget: perTarget})
	if err != nil {
		t.Fatal(err)
	}
	<-x.counted
	rec := func(target string, i int) Record {
		return Record{Target: target, Source: fmt.Sprintf("http://s%d.test/", i), From: dayTime(1), Seen: dayTime(1)}
	}
	// Before the reopen: two records of each target.
	var recs []Record
	for i := range 2 {
		for j := range 50 {
			recs = append(recs, rec(fmt.Sprintf("http://t.test/%d", j), i))
		}
	}
	if _, err := x.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	x.Close()

	started, release := make(chan struct{}), make(chan struct{})
	countHook = func() { close(started); <-release }
	t.Cleanup(func() { countHook = nil })
	x, err = Open(dir, Config{PerTarget: perTarget})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	<-started
	// During the count: two more of each (the cap reached).
	recs = recs[:0]
	for i := 2; i < 4; i++ {
		for j := range 50 {
			recs = append(recs, rec(fmt.Sprintf("http://t.test/%d", j), i))
		}
	}
	if _, err := x.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if x.byKey != 0 {
		t.Fatalf("%d targets read by key before the count ended", x.byKey)
	}
	close(release)
	<-x.counted
	for j := range 50 {
		if b := x.held.bound(fmt.Sprintf("http://t.test/%d", j)); b < 4 {
			t.Fatalf("target %d: bound %d, 4 held", j, b)
		}
	}
	// After: a fifth record of each is refused, not kept.
	recs = recs[:0]
	for j := range 50 {
		recs = append(recs, rec(fmt.Sprintf("http://t.test/%d", j), 4))
	}
	if _, err := x.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	res, err := x.Links(ctx, "http://t.test/7", time.Time{}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != perTarget || res.More != 1 {
		t.Fatalf("%d records kept, %d refused; want %d and 1", len(res.Records), res.More, perTarget)
	}
}

// TestHeldCountFailureLogged: a key the count of Open cannot read leaves
// the bound unset (Puts walk their targets, keeping and refusing the
// same records) and is logged, not silent.
func TestHeldCountFailureLogged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	x, err := Open(dir, Config{PerTarget: 2})
	if err != nil {
		t.Fatal(err)
	}
	<-x.counted
	if err := x.db.Put([]byte{pLink, 'x'}, nil, nil); err != nil { // no separator: malformed
		t.Fatal(err)
	}
	x.Close()
	var logged bytes.Buffer
	x, err = Open(dir, Config{PerTarget: 2, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	<-x.counted
	if x.held != nil {
		t.Fatal("a count over a malformed key set the bound")
	}
	if !strings.Contains(logged.String(), "counting the records held per target failed") {
		t.Fatalf("no log of the failed count: %q", logged.String())
	}
	recs := []Record{{Target: "http://t.test/", Source: "http://s.test/", From: dayTime(1), Seen: dayTime(1)}}
	if n, err := x.Put(ctx, recs); err != nil || n != 1 {
		t.Fatalf("a put after the failed count: %d, %v", n, err)
	}
}
