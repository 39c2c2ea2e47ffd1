package crawl

import (
	"context"
	"sync"
	"time"
)

// Back-off after a failed Put. The page's entry stays queued (archiveErr)
// and the fetch that failed waits before it gives back its slots, so a
// store that cannot write slows the crawl down instead of spinning
// through the queue; each failure in a row doubles the wait, from
// storeRetryMin up to storeRetryMax, and a successful Put resets it.
const (
	storeRetryMin = time.Second
	storeRetryMax = time.Minute
)

// storeRetry is the crawler's back-off state.
type storeRetry struct {
	mu   sync.Mutex
	next time.Duration // the wait after the next failure; 0: none in a row
	// sleep waits d or until ctx ends; nil means a timer (tests set it).
	sleep func(ctx context.Context, d time.Duration)
}

// failed records a failure and returns how long to wait.
func (r *storeRetry) failed() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := max(r.next, storeRetryMin)
	r.next = min(2*d, storeRetryMax)
	return d
}

// ok records a successful Put.
func (r *storeRetry) ok() {
	r.mu.Lock()
	r.next = 0
	r.mu.Unlock()
}

// wait waits d or until ctx ends.
func (r *storeRetry) wait(ctx context.Context, d time.Duration) {
	if r.sleep != nil {
		r.sleep(ctx, d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
