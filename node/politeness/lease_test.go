package politeness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herod-archive/herod/crawl"
)

// ownerStub is an owner reached without a network: it counts lease calls
// and answers from a real allocator, or fails while down is set.
type ownerStub struct {
	alloc *slotAllocator
	calls atomic.Int64
	down  atomic.Bool
}

func newOwnerStub() *ownerStub { return &ownerStub{alloc: newSlotAllocator(time.Now)} }

func (o *ownerStub) lease(ctx context.Context, host string, k int, iv, sp time.Duration) (slotGrant, error) {
	o.calls.Add(1)
	if o.down.Load() {
		return slotGrant{}, errors.New("owner unreachable")
	}
	return o.alloc.allocate(host, "stub", k, iv, sp), nil
}

// TestLeaseBudgetAggregate runs several nodes' budgets against one owner,
// each with concurrent waiters, in a synctest bubble (virtual time, no
// latency): every request of the aggregate lands at least one interval
// after the previous one, and leases are amortized over several requests.
func TestLeaseBudgetAggregate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			rate    = 20.0
			nodes   = 4
			waiters = 2 // per node: host loop and a robots.txt fetch, say
			perWait = 25
		)
		owner := newOwnerStub()
		var mu sync.Mutex
		var sent []time.Time
		var wg sync.WaitGroup
		budgets := make([]*leaseBudget, nodes)
		for i := range budgets {
			budgets[i] = newLeaseBudget(rate, owner.lease, crawl.NewSharedBudget(rate, nil, nil), nil)
			for range waiters {
				wg.Go(func() {
					for range perWait {
						if err := budgets[i].Wait(t.Context(), "example.org", 0); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						sent = append(sent, time.Now())
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
		iv := time.Duration(float64(time.Second) / rate)
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap < iv {
				t.Fatalf("requests %d and %d only %s apart, interval %s", i-1, i, gap, iv)
			}
		}
		total := nodes * waiters * perWait
		if calls := owner.calls.Load(); calls*2 > int64(total) {
			t.Errorf("%d lease calls for %d requests: leases not amortized", calls, total)
		}
		var used int64
		for _, b := range budgets {
			used += b.snapshot().Used
		}
		if used != int64(total) {
			t.Errorf("used %d slots, want %d", used, total)
		}
		t.Logf("%d requests, %d leases", total, owner.calls.Load())
	})
}

// TestLeaseBudgetFallback: when the owner fails, the host is paced by the
// fallback budget for fallbackFor, then the owner is asked again.
func TestLeaseBudgetFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner := newOwnerStub()
		owner.down.Store(true)
		// The fallback assumes four nodes: a quarter of 10/s.
		fb := crawl.NewSharedBudget(10, func() int { return 4 }, nil)
		b := newLeaseBudget(10, owner.lease, fb, nil)
		ctx := t.Context()
		start := time.Now()
		for range 3 {
			if err := b.Wait(ctx, "h", 0); err != nil {
				t.Fatal(err)
			}
		}
		st := b.snapshot()
		if st.Failures != 1 || st.FallbackWaits != 3 {
			t.Fatalf("after owner failure: %+v, want 1 failure and 3 fallback waits", st)
		}
		// Two requests after the first at 2.5/s: 800ms.
		if got := time.Since(start); got != 800*time.Millisecond {
			t.Errorf("fallback paced 3 requests over %s, want 800ms", got)
		}
		owner.down.Store(false)
		time.Sleep(fallbackFor)
		if err := b.Wait(ctx, "h", 0); err != nil {
			t.Fatal(err)
		}
		if st := b.snapshot(); st.Used != 1 || owner.calls.Load() != 2 {
			t.Errorf("after fallbackFor: %+v, %d lease calls; want the owner asked again", st, owner.calls.Load())
		}
	})
}

// TestLeaseBudgetTimeoutKinds: a lease that fails because a call or a
// stream of it ran out of its own deadline counts as a timeout, like one
// that ran out of the lease's; any other failure does not.
func TestLeaseBudgetTimeoutKinds(t *testing.T) {
	for _, c := range []struct {
		err      error
		timeouts int64
	}{
		{fmt.Errorf("lease h: ring lookup to x: %w", context.DeadlineExceeded), 1},
		{fmt.Errorf("lease h: budget reply: %w", os.ErrDeadlineExceeded), 1},
		{errors.New("lease h: budget reply: remote refused"), 0},
	} {
		lease := func(context.Context, string, int, time.Duration, time.Duration) (slotGrant, error) {
			return slotGrant{}, c.err
		}
		b := newLeaseBudget(10, lease, crawl.NewSharedBudget(10, func() int { return 1 }, nil), nil)
		if err := b.Wait(t.Context(), "h", 0); err != nil {
			t.Fatal(err)
		}
		if st := b.snapshot(); st.Failures != 1 || st.Timeouts != c.timeouts {
			t.Errorf("%v: %d failures, %d timeouts; want 1 and %d", c.err, st.Failures, st.Timeouts, c.timeouts)
		}
	}
}

// TestLeaseBudgetCrawlDelay: slots leased at the plain rate are dropped
// when a longer Crawl-delay becomes known, and later slots honour it.
func TestLeaseBudgetCrawlDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner := newOwnerStub()
		b := newLeaseBudget(10, owner.lease, crawl.NewLocalBudget(10, nil), nil)
		ctx := t.Context()
		if err := b.Wait(ctx, "h", 0); err != nil { // leases 2 slots 100ms apart
			t.Fatal(err)
		}
		t0 := time.Now()
		for range 2 {
			if err := b.Wait(ctx, "h", 2*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		// The first is 2s after the last slot granted (the unused one at
		// 100ms), the second 2s after that.
		if got := time.Since(t0); got != 4100*time.Millisecond {
			t.Errorf("two requests with Crawl-delay 2s took %s after the first, want 4.1s", got)
		}
		if st := b.snapshot(); st.Expired == 0 {
			t.Errorf("slots of the shorter spacing were not dropped: %+v", st)
		}
	})
}

// TestLeaseBudgetExpiry: slots a node does not use in time expire instead
// of being spent late, and the next lease is smaller.
func TestLeaseBudgetExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner := newOwnerStub()
		b := newLeaseBudget(10, owner.lease, crawl.NewLocalBudget(10, nil), nil)
		ctx := t.Context()
		for range 2 { // first lease: 2 slots, both used
			if err := b.Wait(ctx, "h", 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Wait(ctx, "h", 0); err != nil { // second lease: 4 slots, 1 used
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the other 3 pass unused
		before := time.Now()
		if err := b.Wait(ctx, "h", 0); err != nil {
			t.Fatal(err)
		}
		if time.Since(before) != 0 {
			t.Errorf("request waited %s on an idle schedule", time.Since(before))
		}
		st := b.snapshot()
		// The third lease is of two slots: three of the four expired, so
		// the lease halves (the node now asks for slots further apart, as
		// it came back a second after its last one, and a lease covers
		// leaseSpan, room for more than two).
		if st.Expired != 3 || st.Granted != 2+4+2 || owner.calls.Load() != 3 {
			t.Errorf("got %+v after %d leases; want 3 expired, 8 granted (2, 4, then 2), 3 leases", st, owner.calls.Load())
		}
	})
}

// TestLeaseBudgetRetryAfter: a full owner schedule makes Wait come back
// later rather than fail.
func TestLeaseBudgetRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner := newOwnerStub()
		// Two other nodes hold slots up to the horizon (0s and 30s; each
		// gets one, its share): the owner first says to retry after 1s,
		// then grants the slot at 31s.
		owner.alloc.allocate("h", "a", 2, 30*time.Second, 0)
		owner.alloc.allocate("h", "b", 2, 30*time.Second, 0)
		b := newLeaseBudget(1, owner.lease, crawl.NewLocalBudget(1, nil), nil)
		start := time.Now()
		if err := b.Wait(t.Context(), "h", 0); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 31*time.Second {
			t.Errorf("waited %s, want 31s (the slot after the other node's)", got)
		}
		if owner.calls.Load() != 2 {
			t.Errorf("%d lease calls, want 2 (retry after, then the grant)", owner.calls.Load())
		}
	})
}

func TestLeaseBudgetCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner := newOwnerStub()
		owner.alloc.allocate("h", "a", 2, 20*time.Second, 0) // 0s
		owner.alloc.allocate("h", "b", 2, 20*time.Second, 0) // 20s: next free slot at 21s
		b := newLeaseBudget(1, owner.lease, crawl.NewLocalBudget(1, nil), nil)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := b.Wait(ctx, "h", 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want deadline exceeded", err)
		}
	})
}

// TestLeaseBudgetFullSpeed: at a rate above what one node can fetch (the
// scale benchmark's 1e9/s, the ring benchmark's 500/s against hosts 20-80
// ms away), a node asks for slots at its own pace, so a lease serves
// several requests and few slots expire. With the spacing capped at 16
// intervals (16 µs; 32 ms) a lease's slots fell due faster than the node
// could use them: 334 leases and 332 expired slots for 1,000 requests at
// 1e9/s and 2 ms a fetch, 1,000 and 999 at 500/s and 50 ms; now 113 and
// 0, 21 and 1. Demand in bursts (two fetches, then a pause: a host whose
// links arrive over the day) costs about a lease per 1.5 requests either
// way; a cap above an eighth of the owner's horizon (16 ms at 1e9/s) made
// it a lease per request, as each lease then held one slot.
func TestLeaseBudgetFullSpeed(t *testing.T) {
	for _, c := range []struct {
		rate       float64
		fetch, gap time.Duration // every third request comes gap after the last, the others fetch after
		maxLeases  int64
		maxExpired int64 // in bursts, the slots leased past a burst's end expire: about one a burst
	}{
		{1e9, 2 * time.Millisecond, 2 * time.Millisecond, 1000 / 6, 1000 / 20},
		{500, 50 * time.Millisecond, 50 * time.Millisecond, 1000 / 16, 1000 / 20},
		{1e9, 2 * time.Millisecond, 60 * time.Millisecond, 700, 1000},
		{500, 2 * time.Millisecond, 300 * time.Millisecond, 700, 1000},
	} {
		t.Run(fmt.Sprintf("%g/s,%v,%v", c.rate, c.fetch, c.gap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				owner := newOwnerStub()
				b := newLeaseBudget(c.rate, owner.lease, crawl.NewLocalBudget(c.rate, nil), nil)
				const requests = 1000
				for i := range requests {
					if err := b.Wait(t.Context(), "h", 0); err != nil {
						t.Fatal(err)
					}
					if i%3 == 2 {
						time.Sleep(c.gap)
					} else {
						time.Sleep(c.fetch)
					}
				}
				st := b.snapshot()
				if st.Used != requests {
					t.Fatalf("got %+v, want %d slots used", st, requests)
				}
				if st.Leases > c.maxLeases || st.Expired > c.maxExpired {
					t.Errorf("%d leases, %d slots expired for %d requests; want at most %d leases, %d expired",
						st.Leases, st.Expired, requests, c.maxLeases, c.maxExpired)
				}
			})
		})
	}
}
