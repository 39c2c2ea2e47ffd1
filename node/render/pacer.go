package render

import (
	"context"
	"sync"
	"time"
)

// Pacer holds the renders of a node to a share of its CPU: a bucket of
// CPU time that fills at share × cores seconds a second, up to Burst
// seconds of that rate; a render may start while the bucket is not
// empty, and what it used (capture.Usage.CPU) is taken out after. Over
// any stretch of time the browsers then use at most the share, plus
// one burst and the renders under way. Safe for concurrent use.
type Pacer struct {
	rate  float64 // CPU seconds per second
	burst float64 // CPU seconds
	now   func() time.Time

	mu     sync.Mutex
	tokens float64
	at     time.Time
}

// Burst is how many seconds of the CPU share the bucket holds.
const Burst = 30 * time.Second

// NewPacer returns a Pacer for share (0, 1] of cores CPUs, full; now is
// the clock (nil: time.Now).
func NewPacer(share float64, cores int, now func() time.Time) *Pacer {
	if now == nil {
		now = time.Now
	}
	rate := share * float64(max(cores, 1))
	p := &Pacer{rate: rate, burst: rate * Burst.Seconds(), now: now}
	p.tokens, p.at = p.burst, now()
	return p
}

// fillLocked adds what the bucket earned since the last look.
func (p *Pacer) fillLocked() {
	t := p.now()
	if d := t.Sub(p.at).Seconds(); d > 0 {
		p.tokens = min(p.burst, p.tokens+d*p.rate)
	}
	p.at = t
}

// Wait returns how long until a render may start (0: now).
func (p *Pacer) Wait() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fillLocked()
	if p.tokens > 0 {
		return 0
	}
	return time.Duration(-p.tokens / p.rate * float64(time.Second))
}

// Charge takes cpu out of the bucket.
func (p *Pacer) Charge(cpu time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fillLocked()
	p.tokens -= cpu.Seconds()
}

// Acquire waits until a render may start, or ctx ends.
func (p *Pacer) Acquire(ctx context.Context) error {
	for {
		d := p.Wait()
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
