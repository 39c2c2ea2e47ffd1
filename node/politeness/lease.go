package politeness

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/crawl"
)

// Tuning of the leasing side of the ring-wide host budget.
const (
	// leaseSpan bounds one lease to about this much time: at most
	// leaseSpan/spacing slots (and maxLeaseSlots), at least one. At the
	// default rate of one request a second a lease holds up to 4 slots,
	// so a node crawling a host it does not own asks its owner once per
	// 2-4 requests instead of once per request (nextK starts at 2 and
	// halves when slots expire unused).
	leaseSpan = 4 * time.Second
	// leaseTimeout bounds one lease request, owner lookup included.
	leaseTimeout = 3 * time.Second
	// fallbackFor is how long a host is paced by the fallback budget after
	// its owner could not be reached, before the owner is asked again.
	fallbackFor = 10 * time.Second
	// maxLeaseHosts bounds the per-host lease table; beyond it, hosts
	// without slots, waiters or a recent use are dropped.
	maxLeaseHosts = 4096
)

// slotGrace is how late a slot may still be used: half an interval, but
// at least minSlotGrace (timer and scheduling delays) for high rates. A
// request sent later than that would crowd the next slot of the host's
// schedule, which may belong to another node, so the slot expires instead.
// Any grace under one interval keeps a window of n intervals at n+1
// requests at most; half an interval lets a node whose fetches are slower
// than the host's rate still use most of its slots.
func slotGrace(interval time.Duration) time.Duration { return max(interval/2, minSlotGrace) }

// minSlotGrace is the least grace of a slot.
const minSlotGrace = 5 * time.Millisecond

// leaseFunc asks the owner of host for up to k slots of the schedule whose
// ticks are interval apart, the slots at least spacing apart. The node's
// implementation finds the owner on the ring and calls it (or its own
// allocator when it owns host).
type leaseFunc func(ctx context.Context, host string, k int, interval, spacing time.Duration) (slotGrant, error)

// leaseBudget is a crawl.HostBudget whose requests to a host are paced by
// the one schedule the host's owner keeps for the whole ring. It leases
// slots in batches (a lease costs one round trip and covers up to
// leaseSpan of the schedule), sends each request in one of its slots, and
// lets slots it cannot use in time expire. When the owner cannot be
// reached it paces the host with fallback (an equal share of the rate)
// for fallbackFor.
//
// Pacing uses real time (time.Now and timers). Wait is safe for
// concurrent use.
type leaseBudget struct {
	rate     float64
	lease    leaseFunc
	fallback crawl.HostBudget
	log      *slog.Logger

	mu    sync.Mutex
	hosts map[string]*leaseState

	stats leaseCounters
}

// leaseState is the leases of one host, guarded by leaseBudget.mu.
type leaseState struct {
	slots    []time.Time   // leased slots, ascending, local time
	interval time.Duration // tick interval the slots were leased at
	k        int           // slots to ask for next
	expired  int           // slots expired since the last lease
	pending  chan struct{} // closed when the lease in flight ends
	waiters  int
	retryAt  time.Time // the owner's schedule is full until then
	fallback time.Time // pace with the fallback budget until then
	used     time.Time
	returned time.Time     // when Wait last returned a slot
	cycle    time.Duration // moving average of the time from a return to the next Wait
}

// leaseCounters are the budget's monotonic counts.
type leaseCounters struct {
	leases, failures, timeouts, granted, used, expired, fallbackWaits atomic.Int64
}

var _ crawl.HostBudget = (*leaseBudget)(nil)

// newLeaseBudget returns a budget of rate requests per second per host
// (crawl.DefaultHostRate when rate <= 0) for the aggregate of all nodes.
func newLeaseBudget(rate float64, lease leaseFunc, fallback crawl.HostBudget, log *slog.Logger) *leaseBudget {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		rate = crawl.DefaultHostRate
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &leaseBudget{rate: rate, lease: lease, fallback: fallback, log: log, hosts: make(map[string]*leaseState)}
}

// interval returns the spacing of a host's requests: 1/rate, or the
// Crawl-delay when longer.
func (b *leaseBudget) interval(minInterval time.Duration) time.Duration {
	return max(time.Duration(float64(time.Second)/b.rate), minInterval, time.Microsecond)
}

// Wait implements crawl.HostBudget: it returns in a slot of host's
// ring-wide schedule, or when ctx is done.
func (b *leaseBudget) Wait(ctx context.Context, host string, minInterval time.Duration) error {
	iv := b.interval(minInterval)
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		b.mu.Lock()
		st := b.stateLocked(host, now)
		if first {
			st.observe(now, iv)
			first = false
		}
		if now.Before(st.fallback) {
			b.mu.Unlock()
			b.stats.fallbackWaits.Add(1)
			return b.fallback.Wait(ctx, host, minInterval)
		}
		b.dropLocked(st, now, iv)
		if len(st.slots) > 0 {
			slot := st.slots[0]
			st.slots = st.slots[1:]
			b.mu.Unlock()
			if err := sleepUntilSlot(ctx, slot); err != nil {
				return err
			}
			if time.Since(slot) > slotGrace(iv) {
				b.noteExpired(host, 1)
				continue
			}
			b.stats.used.Add(1)
			b.mu.Lock()
			st.returned = time.Now()
			b.mu.Unlock()
			return nil
		}
		if ch := st.pending; ch != nil {
			st.waiters++
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
			}
			b.mu.Lock()
			st.waiters--
			b.mu.Unlock()
			continue
		}
		if now.Before(st.retryAt) {
			at := st.retryAt
			b.mu.Unlock()
			if err := sleepUntilSlot(ctx, at); err != nil {
				return err
			}
			continue
		}
		sp := st.spacing(iv)
		k := st.nextK(b.maxSlots(sp))
		ch := make(chan struct{})
		st.pending = ch
		b.mu.Unlock()
		b.leaseFor(host, st, k, iv, sp, ch)
	}
}

// leaseFor asks the owner for k slots of host and stores the answer. It
// runs detached from the asking Wait's ctx: the slots serve whoever waits
// next.
func (b *leaseBudget) leaseFor(host string, st *leaseState, k int, iv, sp time.Duration, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	g, err := b.lease(ctx, host, k, iv, sp)
	// A call of the lease's owner lookup has a deadline of its own (the
	// ring's call timeout), and so has a stream: either running out is a
	// slow answer too.
	timedOut := ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
	cancel()
	now := time.Now()
	b.stats.leases.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	defer close(done)
	st.pending = nil
	if err != nil {
		b.stats.failures.Add(1)
		if timedOut {
			b.stats.timeouts.Add(1)
		}
		st.fallback = now.Add(fallbackFor)
		b.log.Warn("host budget: owner unreachable, pacing with an equal share", "host", host, "for", fallbackFor, "err", err)
		return
	}
	if len(g.Delays) == 0 {
		st.retryAt = now.Add(max(g.RetryAfter, iv))
		return
	}
	// The owner's now lies between sending and receiving: placing the
	// slots after receipt keeps them no earlier than the owner meant.
	for _, d := range g.Delays {
		st.slots = append(st.slots, now.Add(max(d, 0)))
	}
	st.interval = iv
	b.stats.granted.Add(int64(len(g.Delays)))
}

// maxSlots is the largest lease for slots sp apart.
func (b *leaseBudget) maxSlots(sp time.Duration) int {
	return min(max(int(leaseSpan/sp), 1), maxLeaseSlots)
}

// maxSpacingFactor and minSpacingCap bound the spacing a node asks for
// (spacingCap), so a node whose cycle was long once (a slow fetch, a
// pause) still asks for a good share of the rate.
const (
	maxSpacingFactor = 16
	minSpacingCap    = 250 * time.Millisecond
)

// spacingCap is the longest spacing a node asks for at interval iv:
// maxSpacingFactor intervals, or, when longer, the shorter of
// minSpacingCap and an eighth of the owner's horizon (horizonTicks), so
// that a lease can still hold several slots. At 500 requests/s 16
// intervals were 32 ms, below the 20-80 ms a fetch of a distant host
// takes, so a lease's slots fell due faster than the node could use them
// and most expired; at 1e9/s (a 1 µs interval, a 16 ms horizon) the cap
// is 2 ms.
func spacingCap(iv time.Duration) time.Duration {
	return max(maxSpacingFactor*iv, min(minSpacingCap, time.Duration(horizonTicks(iv))*iv/8))
}

// observe records how long after its last slot this node came back for
// another: the time it needs per request to the host (with one connection
// per host, about a fetch).
func (st *leaseState) observe(now time.Time, iv time.Duration) {
	if st.returned.IsZero() {
		return
	}
	d := min(now.Sub(st.returned), spacingCap(iv))
	if st.cycle == 0 {
		st.cycle = d
	} else {
		st.cycle = (3*st.cycle + d) / 4
	}
}

// spacing is how far apart this node asks its slots to be: the host's
// interval, or this node's own cycle when it is slower, so that the ticks
// it could not use go to other nodes instead of expiring.
func (st *leaseState) spacing(iv time.Duration) time.Duration {
	return min(max(iv, st.cycle), spacingCap(iv))
}

// nextK adapts the lease size: it doubles while every leased slot gets
// used and halves when most expired.
func (st *leaseState) nextK(maxK int) int {
	switch {
	case st.k == 0:
		st.k = 2
	case st.expired == 0:
		st.k *= 2
	case st.expired > st.k/2:
		st.k /= 2
	}
	st.k = min(max(st.k, 1, st.waiters+1), maxK)
	st.expired = 0
	return st.k
}

// dropLocked discards slots too old to use, and all slots leased with a
// shorter spacing than iv (a Crawl-delay became known since).
func (b *leaseBudget) dropLocked(st *leaseState, now time.Time, iv time.Duration) {
	n := 0
	if iv > st.interval {
		n = len(st.slots)
	} else {
		for n < len(st.slots) && now.Sub(st.slots[n]) > slotGrace(iv) {
			n++
		}
	}
	if n > 0 {
		st.slots = st.slots[n:]
		st.expired += n
		b.stats.expired.Add(int64(n))
	}
}

func (b *leaseBudget) noteExpired(host string, n int) {
	b.stats.expired.Add(int64(n))
	b.mu.Lock()
	if st, ok := b.hosts[host]; ok {
		st.expired += n
	}
	b.mu.Unlock()
}

// stateLocked returns host's lease state, creating it (and evicting idle
// hosts when the table is full).
func (b *leaseBudget) stateLocked(host string, now time.Time) *leaseState {
	st, ok := b.hosts[host]
	if !ok {
		if len(b.hosts) >= maxLeaseHosts {
			for h, s := range b.hosts {
				if s.pending == nil && s.waiters == 0 && now.Sub(s.used) > time.Minute &&
					(len(s.slots) == 0 || now.After(s.slots[len(s.slots)-1])) {
					delete(b.hosts, h)
				}
			}
		}
		st = &leaseState{}
		b.hosts[host] = st
	}
	st.used = now
	return st
}

// LeaseStats is a snapshot of a node's host-budget leasing.
type LeaseStats struct {
	// Leases counts lease requests (local or remote); Failures those that
	// could not reach the owner; Timeouts, of those, the ones the owner
	// did not answer within the lease timeout (3 s, lookup included) or a
	// call or stream of it within its own deadline: a slow or overloaded
	// owner rather than a refusal or a broken route.
	Leases, Failures, Timeouts int64
	// Granted, Used and Expired count slots.
	Granted, Used, Expired int64
	// FallbackWaits counts requests paced by the equal-share fallback.
	FallbackWaits int64
}

func (b *leaseBudget) snapshot() LeaseStats {
	return LeaseStats{
		Leases: b.stats.leases.Load(), Failures: b.stats.failures.Load(), Timeouts: b.stats.timeouts.Load(),
		Granted: b.stats.granted.Load(), Used: b.stats.used.Load(), Expired: b.stats.expired.Load(),
		FallbackWaits: b.stats.fallbackWaits.Load(),
	}
}

// sleepUntilSlot waits until t or until ctx is done.
func sleepUntilSlot(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
