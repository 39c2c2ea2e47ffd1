package forward

import (
	"sync"
	"time"
)

// knownBuckets holds a token bucket per sender of known URLs: each holds
// up to a day's allowance and refills it over 24 hours, so that a member
// can make a node remember at most about KnownPerDay of its URLs a day,
// whatever it sends.
type knownBuckets struct {
	mu sync.Mutex
	m  map[string]*knownBucket
}

type knownBucket struct {
	tokens float64
	last   time.Time
}

// maxKnownSenders bounds the buckets kept; a full map is cleared (only
// ring members send known URLs, far fewer).
const maxKnownSenders = 4096

// take returns how many of n URLs from sender fit its allowance now,
// and spends them.
func (b *knownBuckets) take(sender string, n, perDay int, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxKnownSenders {
		b.m = make(map[string]*knownBucket)
	}
	k, ok := b.m[sender]
	if !ok {
		k = &knownBucket{tokens: float64(perDay), last: now}
		b.m[sender] = k
	}
	if d := now.Sub(k.last); d > 0 {
		k.tokens = min(float64(perDay), k.tokens+float64(perDay)*d.Hours()/24)
		k.last = now
	}
	got := min(n, int(k.tokens))
	k.tokens -= float64(got)
	return got
}
