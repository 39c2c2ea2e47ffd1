package politeness

import (
	"slices"
	"sync"
	"time"
)

// Limits of the host schedule a node keeps for the hosts it owns.
const (
	// maxLeaseSlots caps the slots one lease request may ask for.
	maxLeaseSlots = 64
	// maxScheduleAhead is how far past its now the owner hands out slots:
	// when a host's schedule is full up to there, a requester is told to
	// come back later instead of holding a slot minutes away.
	maxScheduleAhead = 30 * time.Second
	// maxScheduleTicks bounds one host's schedule table (at high rates
	// the horizon is this many intervals rather than maxScheduleAhead).
	maxScheduleTicks = 1 << 14
	// maxScheduledHosts bounds the schedule table; beyond it, hosts whose
	// last slot is long past are forgotten (their spacing no longer
	// constrains anything).
	maxScheduledHosts = 8192
	// scheduleIdle is how long past its last slot (or its interval, if
	// longer) a host is kept when the table is full.
	scheduleIdle = 10 * time.Minute
	// maxScheduledHostsHard bounds the table when no host in it is idle:
	// a request for a host not in it then waits (RetryAfter
	// newHostRetry), so that members asking about ever new host names
	// cannot grow it, nor the scan that looks for idle hosts.
	maxScheduledHostsHard = 1 << 16
	newHostRetry          = 30 * time.Second
	// evictEvery bounds how often a full table is scanned for idle hosts.
	evictEvery = time.Second
)

// slotAllocator is the owner side of the ring-wide host budget: one global
// schedule of request slots per host. The schedule is a grid of ticks one
// interval apart; each tick is granted to at most one requester. So every
// two slots granted for a host, whoever asked, are at least one interval
// apart, and the requests of all nodes together keep the host's spacing
// as long as every node sends only in its slots.
//
// A requester also names its own spacing (how often it can use a slot):
// its slots are that far apart, and the ticks in between go to other
// requesters, so a slow node does not hold up the host's schedule.
//
// It is a plain state machine over an injected clock; it is safe for
// concurrent use.
type slotAllocator struct {
	clock func() time.Time

	mu        sync.Mutex
	hosts     map[string]*hostSchedule
	lastEvict time.Time // the last scan for idle hosts (evictLocked)
}

// hostSchedule is one host's grid: tick i is at base + i·interval and
// taken says whether it was granted. last is the latest granted slot.
// held lists, per requester, its granted slots not yet past (ascending).
type hostSchedule struct {
	interval time.Duration
	base     time.Time
	taken    tickSet
	last     time.Time
	held     map[string][]time.Time
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
	return &slotAllocator{clock: clock, hosts: make(map[string]*hostSchedule)}
}

// allocate grants requester who up to k slots (at least 1, at most
// maxLeaseSlots) of host's schedule with ticks interval apart, the granted
// slots at least spacing apart (spacing below interval counts as
// interval), none before now and none more than maxScheduleAhead (or
// maxScheduleTicks ticks) past now. When no tick is free within that
// horizon it grants none and says when to retry. interval must be
// positive.
//
// No requester holds more than its fair share of the horizon's ticks: the
// ticks divided by one more than the requesters holding slots not yet
// past, who included, so that even a lone requester leaves room for the
// next one. A peer that asks again and again cannot fill a host's
// schedule and lock the other nodes out of the host; slots it already
// holds are honoured, and it gets no more until it is under its share
// again. who names the requester (requester: a remote node's IP address,
// so identities run from one machine count as one; this node's peer id
// for itself); requests with the same who share one share.
//
// A changed interval (a Crawl-delay became known or went away) starts a
// new grid one new interval after the last granted slot.
func (a *slotAllocator) allocate(host, who string, k int, interval, spacing time.Duration) slotGrant {
	k = min(max(k, 1), maxLeaseSlots)
	interval = max(interval, time.Nanosecond)
	stride := 1
	if spacing > interval {
		stride = int((spacing + interval - 1) / interval)
	}
	now := a.clock()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.evictLocked(now)
	s, ok := a.hosts[host]
	switch {
	case !ok && len(a.hosts) >= maxScheduledHostsHard:
		return slotGrant{RetryAfter: newHostRetry}
	case !ok:
		s = &hostSchedule{interval: interval, base: now}
		a.hosts[host] = s
	case s.interval != interval || !s.pendingAfter(now):
		// Nothing granted lies ahead, or the spacing changed: a new grid
		// starts at now or one interval after the last slot.
		*s = hostSchedule{interval: interval, base: laterOf(s.last.Add(interval), now), last: s.last, held: s.held, taken: s.taken.cleared()}
	}
	s.advance(now)
	horizon := horizonTicks(interval)
	// The window holds ticks 0..horizon from now: horizon+1 of them. One
	// share is kept for a requester yet to come.
	share := max(1, int((horizon+1)/int64(s.holders(now, who)+1)))
	mine := s.held[who]
	if len(mine) >= share {
		// Over its share: back when its earliest slot has passed.
		return slotGrant{RetryAfter: max(interval, mine[0].Sub(now)+time.Nanosecond)}
	}
	k = min(k, share-len(mine))
	mine = slices.Grow(mine, k)
	first := s.firstTickAt(now)
	g := slotGrant{Delays: make([]time.Duration, 0, k)}
	for i := first; len(g.Delays) < k; {
		at := s.base.Add(time.Duration(i) * interval)
		if i > int64(maxScheduleTicks) || at.Sub(now) > time.Duration(horizon)*interval {
			break
		}
		if s.taken.has(i) {
			i++
			continue
		}
		s.taken.add(i)
		s.last = laterOf(s.last, at)
		mine = append(mine, at)
		g.Delays = append(g.Delays, at.Sub(now))
		i += int64(stride)
	}
	if len(mine) > 0 {
		slices.SortFunc(mine, time.Time.Compare)
		if s.held == nil {
			s.held = make(map[string][]time.Time)
		}
		s.held[who] = mine
	}
	if len(g.Delays) == 0 {
		g.RetryAfter = interval
	}
	return g
}

// horizonTicks is how many ticks interval apart past now an owner hands
// out: maxScheduleAhead's worth, at most maxScheduleTicks, at least one.
func horizonTicks(interval time.Duration) int64 {
	return max(min(int64(maxScheduleTicks), int64(maxScheduleAhead/interval)), 1)
}

// holders forgets the held slots before now and returns the number of
// requesters holding slots, who counted whether or not it holds any.
func (s *hostSchedule) holders(now time.Time, who string) int {
	n := 1
	for w, slots := range s.held {
		i := 0
		for i < len(slots) && slots[i].Before(now) {
			i++
		}
		switch {
		case i == len(slots):
			delete(s.held, w)
		case w != who:
			n++
		}
		if i > 0 && i < len(slots) {
			s.held[w] = slots[i:]
		}
	}
	return n
}

// pendingAfter reports whether a granted slot lies at or after now.
func (s *hostSchedule) pendingAfter(now time.Time) bool { return !s.last.Before(now) }

// firstTickAt returns the first tick at or after t.
func (s *hostSchedule) firstTickAt(t time.Time) int64 {
	if !t.After(s.base) {
		return 0
	}
	return int64((t.Sub(s.base) + s.interval - 1) / s.interval)
}

// advance drops the ticks before now, moving base forward on the grid.
func (s *hostSchedule) advance(now time.Time) {
	n := s.firstTickAt(now)
	if n == 0 {
		return
	}
	s.taken.drop(n)
	s.base = s.base.Add(time.Duration(n) * s.interval)
}

// evictLocked forgets idle hosts when the table is full, scanning it at
// most once every evictEvery.
func (a *slotAllocator) evictLocked(now time.Time) {
	if len(a.hosts) < maxScheduledHosts || now.Sub(a.lastEvict) < evictEvery {
		return
	}
	a.lastEvict = now
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
