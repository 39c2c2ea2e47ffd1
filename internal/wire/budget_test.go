package wire

import (
	"context"
	"testing"
	"time"
)

// TestReplyBudget: Take gives what is free, at most the budget's size for
// a larger reply, nothing past it unless it waits, and the bytes a
// Release gives back.
func TestReplyBudget(t *testing.T) {
	ctx := context.Background()
	b := NewReplyBudget(100)
	big, ok := b.Take(ctx, 1000, false)
	if !ok || big != 100 {
		t.Fatalf("a reply over the budget took %d, %v; want all 100", big, ok)
	}
	if n, ok := b.Take(ctx, 1, false); ok || n != 0 {
		t.Fatalf("a byte of a spent budget: %d, %v", n, ok)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, ok := b.Take(short, 1, true); ok {
		t.Fatal("a wait past its deadline took bytes")
	}
	b.Release(big)
	if n, ok := b.Take(ctx, 40, true); !ok || n != 40 {
		t.Fatalf("after the release: %d, %v", n, ok)
	}
	if n, ok := b.Take(ctx, 0, false); !ok || n != 0 {
		t.Fatalf("nothing: %d, %v", n, ok)
	}
}
