package wire

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// DefaultReplyBytes is the size of a node's reply budget: the bytes of
// records its replies to other nodes hold at once.
const DefaultReplyBytes = 128 << 20

// ReplyBudget bounds the bytes that replies to peers hold between reading
// what they carry (records) and writing it: a peer that asks for large
// replies and reads them slowly holds at most the budget, shared by every
// protocol handler given the same budget. It is safe for concurrent use.
type ReplyBudget struct {
	sem  *semaphore.Weighted
	size int64
}

// NewReplyBudget returns a budget of size bytes.
func NewReplyBudget(size int64) *ReplyBudget {
	return &ReplyBudget{sem: semaphore.NewWeighted(size), size: size}
}

// Size returns the budget's bytes.
func (b *ReplyBudget) Size() int64 { return b.size }

// Take takes n bytes of the budget (all of it for more than its size):
// at once if they are free, or when wait is set, as soon as they are,
// until ctx ends. It returns the bytes taken, to Release once the reply
// is written, and false (nothing taken) when it could not.
func (b *ReplyBudget) Take(ctx context.Context, n int64, wait bool) (int64, bool) {
	n = min(max(n, 0), b.size)
	if n == 0 {
		return 0, true
	}
	if wait {
		if b.sem.Acquire(ctx, n) != nil {
			return 0, false
		}
	} else if !b.sem.TryAcquire(n) {
		return 0, false
	}
	return n, true
}

// Fit makes took bytes, taken for a reply before its size was known
// (a record's stored size, before it was read and perhaps transcoded),
// the reply's n bytes, at most the budget's size: it gives back what
// took holds past them, or takes the rest (at once, or when wait is set
// as soon as it is free, until ctx ends). It returns the bytes the reply
// now holds, to Release once it is written, and false when the rest
// could not be taken (took is then still held).
func (b *ReplyBudget) Fit(ctx context.Context, took, n int64, wait bool) (int64, bool) {
	n = min(max(n, 0), b.size)
	switch {
	case took > n:
		b.Release(took - n)
		return n, true
	case took < n:
		more, ok := b.Take(ctx, n-took, wait)
		return took + more, ok
	}
	return took, true
}

// Release gives back n bytes Take returned.
func (b *ReplyBudget) Release(n int64) {
	if n > 0 {
		b.sem.Release(n)
	}
}
