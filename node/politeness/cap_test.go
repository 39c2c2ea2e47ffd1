package politeness

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herod-archive/herod/crawl"
)

// honestRing runs nodes leaseBudgets against one honest owner for d, each
// with waiters concurrent requesters that hold each request for fetch
// after its slot, every request also waiting for the node's local cap at
// rate when capped (as the crawler does: crawl.CapBudget), and returns the
// aggregate requests sent.
func honestRing(ctx context.Context, rate float64, nodes, waiters int, fetch, d time.Duration, capped bool) int64 {
	owner := newOwnerStub()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range nodes {
		var b crawl.HostBudget = newLeaseBudget(rate, owner.lease, crawl.NewSharedBudget(rate, nil, nil), nil)
		if capped {
			b = crawl.CapBudget(b, rate, nil)
		}
		for range waiters {
			wg.Go(func() {
				for b.Wait(ctx, "example.org", 0) == nil {
					sent.Add(1)
					if fetch > 0 {
						time.Sleep(fetch)
					}
				}
			})
		}
	}
	wg.Wait()
	return sent.Load()
}

// TestCapKeepsHonestRingRate: in virtual time (no latency, no jitter) an
// honest ring's leased schedule sends as many requests (but the one due at
// the deadline) with each
// node's local cap as without: the cap binds only against grants closer
// than the host's interval, which an honest owner never makes to one node
// (in virtual time no slot is used late).
func TestCapKeepsHonestRingRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, nodes, waiters, d = 20.0, 4, 2, 10 * time.Second
		plain := honestRing(t.Context(), rate, nodes, waiters, 0, d, false)
		capped := honestRing(t.Context(), rate, nodes, waiters, 0, d, true)
		if plain < int64(rate*d.Seconds()*0.9) {
			t.Fatalf("honest ring sent %d requests in %s at %g/s", plain, d, rate)
		}
		// The request due exactly at the deadline may fall either side.
		if capped < plain-1 {
			t.Errorf("capped ring sent %d requests, uncapped %d", capped, plain)
		}
	})
}

// BenchmarkHonestRingCap measures, in real time, the aggregate request
// rate of an honest ring leasing from one owner, without and with each
// node's local cap, alternating, and reports both and their ratio
// (capped/uncapped). Two shapes: 4 nodes with 2 requesters each that send
// at once ("burst", 50/s), and TestPoliteRing's 8 nodes with one
// requester each holding every request 30 ms as a fetch would ("fetch",
// 20/s).
//
//	go test -run '^$' -bench HonestRingCap -benchtime 3x ./node/politeness/
func BenchmarkHonestRingCap(b *testing.B) {
	for _, c := range []struct {
		name           string
		rate           float64
		nodes, waiters int
		fetch          time.Duration
	}{
		{"burst", 50, 4, 2, 0},
		{"fetch", 20, 8, 1, 30 * time.Millisecond},
	} {
		b.Run(c.name, func(b *testing.B) {
			const d = 3 * time.Second
			var plain, capped int64
			for b.Loop() {
				plain += honestRing(b.Context(), c.rate, c.nodes, c.waiters, c.fetch, d, false)
				capped += honestRing(b.Context(), c.rate, c.nodes, c.waiters, c.fetch, d, true)
			}
			n := float64(b.N) * d.Seconds()
			b.ReportMetric(float64(plain)/n, "req/s-uncapped")
			b.ReportMetric(float64(capped)/n, "req/s-capped")
			b.ReportMetric(float64(capped)/float64(plain), "ratio")
		})
	}
}
