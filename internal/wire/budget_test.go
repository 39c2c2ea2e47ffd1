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

// TestReplyBudgetFit: Fit gives back what an estimate took past the
// reply's bytes, takes what it lacks, and keeps the estimate when the
// rest is not free.
func TestReplyBudgetFit(t *testing.T) {
	ctx := context.Background()
	b := NewReplyBudget(100)
	took, _ := b.Take(ctx, 60, false)
	if held, ok := b.Fit(ctx, took, 20, false); !ok || held != 20 {
		t.Fatalf("fit 60 to 20: %d, %v", held, ok)
	}
	if n, ok := b.Take(ctx, 80, false); !ok || n != 80 {
		t.Fatalf("the 40 given back are not free: %d, %v", n, ok)
	}
	if held, ok := b.Fit(ctx, 20, 30, false); ok || held != 20 {
		t.Fatalf("fit 20 to 30 with nothing free: %d, %v; want 20 still held", held, ok)
	}
	b.Release(80)
	if held, ok := b.Fit(ctx, 20, 500, false); !ok || held != 100 {
		t.Fatalf("fit to more than the budget: %d, %v; want all 100", held, ok)
	}
	if n, ok := b.Take(ctx, 1, false); ok || n != 0 {
		t.Fatalf("a byte past a fitted reply: %d, %v", n, ok)
	}
}
