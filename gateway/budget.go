package gateway

import (
	"context"
	"sync"
	"time"
)

// budget is a weighted semaphore of bytes (Limits.MemoryBudget), or of
// slots (Limits.MaxFetches, each weighing 1). Unlike a FIFO semaphore,
// any waiter that fits takes its share when some is released: a small
// page is not held up behind a large one that waits for room.
type budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	changed chan struct{} // closed and replaced whenever used drops
}

func newBudget(size int64) *budget {
	return &budget{size: size, changed: make(chan struct{})}
}

// charge returns the share n asks for: at most the whole budget, so that
// one body larger than it can still be served alone.
func (b *budget) charge(n int64) int64 { return max(1, min(n, b.size)) }

// acquire takes n (already capped by charge) within wait, or reports
// false when ctx ends or wait passes first.
func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	var timer <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.size {
			b.used += n
			b.mu.Unlock()
			return true
		}
		ch := b.changed
		b.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ch:
		case <-timer:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// tryAcquire takes n if it is free now.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

// release gives n back and wakes the waiters.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// inUse returns the share taken now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
