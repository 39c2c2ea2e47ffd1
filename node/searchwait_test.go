package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/ring"
)

// TestWaitRangesKnown: the start's backfill waits for every range to be
// known, looking again at each ring event, and gives up at its limit or
// when its context ends.
func TestWaitRangesKnown(t *testing.T) {
	var known atomic.Bool
	events := make(chan ring.Event)
	done := make(chan bool, 1)
	go func() { done <- waitRangesKnown(context.Background(), known.Load, events, time.Hour) }()
	select {
	case <-done:
		t.Fatal("returned before the ranges were known")
	case <-time.After(50 * time.Millisecond):
	}
	known.Store(true)
	events <- ring.Event{Kind: ring.RangeChanged}
	if !<-done {
		t.Fatal("known after an event: want true")
	}

	if waitRangesKnown(context.Background(), func() bool { return false }, nil, 10*time.Millisecond) {
		t.Error("never known: want false at the limit")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if waitRangesKnown(ctx, func() bool { return false }, nil, time.Hour) {
		t.Error("context ended: want false")
	}
	closed := make(chan ring.Event)
	close(closed)
	if !waitRangesKnown(context.Background(), func() bool { return true }, closed, time.Hour) {
		t.Error("known from the start: want true")
	}
}
