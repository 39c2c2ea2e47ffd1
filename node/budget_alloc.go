package node

import (
	"sync"
	"time"
)

// Limits of the host schedule a node keeps for the hosts it owns.
const (
	// maxLeaseSlots caps the slots one lease request may ask for.
	maxLeaseSlots = 64
	// maxScheduleAhead is how far past its now the owner hands out slots:
	// when a host's schedule already reaches further, a requester is told
	// to come back later instead of holding a slot minutes away.
	maxScheduleAhead = 30 * time.Second
	// maxScheduledHosts bounds the schedule table; beyond it, hosts whose
	// last slot is long past are forgotten (their spacing no longer
	// constrains anything).
	maxScheduledHosts = 8192
	// scheduleIdle is how long past its last slot (or its interval, if
	// longer) a host is kept when the table is full.
	scheduleIdle = 10 * time.Minute
)

// slotAllocator is the owner side of the ring-wide host budget: one global
// schedule of request slots per host. Every slot it grants for a host lies
// at least the requesting interval after the previous slot it granted for
// that host, whoever asked, so the requests of all nodes together keep the
// host's spacing as long as every node sends only in its slots.
//
// It is a plain state machine over an injected clock; it is safe for
// concurrent use.
type slotAllocator struct {
	clock func() time.Time

	mu    sync.Mutex
	hosts map[string]hostSchedule
}

// hostSchedule is the last slot granted for a host and the spacing asked
// with it.
type hostSchedule struct {
	last     time.Time
	interval time.Duration
}

// slotGrant is what the owner answers to one lease request.
type slotGrant struct {
	// Delays are the granted slots relative to the owner's now, ascending.
	Delays []time.Duration
	// RetryAfter, when Delays is empty, is how long until the schedule
	// has room again.
	RetryAfter time.Duration
}

func newSlotAllocator(clock func() time.Time) *slotAllocator {
	if clock == nil {
		clock = time.Now
	}
	return &slotAllocator{clock: clock, hosts: make(map[string]hostSchedule)}
}

// allocate grants up to k slots (at least 1, at most maxLeaseSlots) for
// host, interval apart, the first at least interval after the last slot
// granted for host and not before now. It grants fewer when the schedule
// would reach more than maxScheduleAhead past now, and none (with a
// RetryAfter) when the first slot would. interval must be positive.
func (a *slotAllocator) allocate(host string, k int, interval time.Duration) slotGrant {
	k = min(max(k, 1), maxLeaseSlots)
	interval = max(interval, time.Nanosecond)
	now := a.clock()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.evictLocked(now)
	s, ok := a.hosts[host]
	next := now
	if ok {
		next = laterOf(s.last.Add(interval), now)
	}
	horizon := now.Add(maxScheduleAhead)
	if next.After(horizon) {
		return slotGrant{RetryAfter: next.Sub(horizon)}
	}
	g := slotGrant{Delays: make([]time.Duration, 0, k)}
	for range k {
		if next.After(horizon) {
			break
		}
		g.Delays = append(g.Delays, next.Sub(now))
		s = hostSchedule{last: next, interval: interval}
		next = next.Add(interval)
	}
	a.hosts[host] = s
	return g
}

// evictLocked forgets idle hosts when the table is full.
func (a *slotAllocator) evictLocked(now time.Time) {
	if len(a.hosts) < maxScheduledHosts {
		return
	}
	for h, s := range a.hosts {
		if now.Sub(s.last) > max(s.interval, scheduleIdle) {
			delete(a.hosts, h)
		}
	}
}

// scheduled reports how many hosts the allocator tracks.
func (a *slotAllocator) scheduled() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.hosts)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
