package node

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/node/politeness"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/ring/ringtest"
)

// Settings of the ring-wide politeness test.
const (
	politeNodes = 8
	politeRate  = 20.0 // requests per second per host, for the whole ring
	// politeBurst is the burst the test allows: in any window of length W
	// the ring sends a host at most politeRate·W + politeBurst requests.
	// The budget's bound is 1 + rate·(grace + dispatch), with grace half
	// an interval (25ms here) and dispatch the time from a slot to the
	// request reaching the server, allowed 100ms on a loaded machine under
	// the race detector: 1 + 20·0.125 = 3.5.
	politeBurst = 3
	politeUA    = "herodtest/0.1 (+https://example.org/herod-volunteer)"
	politeFrom  = "volunteer@example.org"
)

// TestPoliteRing is issue 5's politeness proof: eight nodes on real libp2p
// hosts crawl the sample web, whose servers record every request, and
//
//   - the aggregate requests to each host stay within the per-host budget
//     in every sliding window (plus the documented burst),
//   - no disallowed path is fetched,
//   - each host's robots.txt is fetched at most twice ring-wide (by its
//     owner and by the second holder that confirms the owner's answer),
//   - every request carries the configured User-Agent and From headers.
//
// It also reports the achieved aggregate rate and the lease RPCs per
// fetched page.
func TestPoliteRing(t *testing.T) {
	if testing.Short() {
		t.Skip("8-node ring crawl in -short mode")
	}
	// Under -race at load 15 (2 cores) forming the 8-node ring took 44 s
	// and each day's crawl 1–2 min: a 3-minute bound failed there 3 runs
	// in 3 with nothing wrong. The bound only ends a hung test.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	t0 := time.Now()
	web := sampleweb.New(sampleweb.Config{Hosts: 3, Pages: 100})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()

	lr, err := StartLocalRing(ctx, t.TempDir(), politeNodes, Config{
		VirtualServers:    2,
		StabilizeInterval: 100 * time.Millisecond,
		FlushInterval:     20 * time.Millisecond,
		Crawl: crawl.Config{
			HostRate:    politeRate,
			Concurrency: 8,
			UserAgent:   politeUA,
			From:        politeFrom,
			// The sample web is on loopback.
			AllowPrivate: loopback,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	// The politeness keys (each host's robots.txt and schedule) must have
	// one owner that every node finds before the crawl; the rest of the
	// ring may still be settling (links then take an extra hop).
	var keys []id.ID
	for _, seed := range web.Seeds() {
		u, err := url.Parse(seed)
		if err != nil {
			t.Fatal(err)
		}
		rk, err := politeness.RobotsKey(u.Scheme + "://" + u.Host)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, rk, politeness.HostKey(u.Host))
	}
	if err := waitOwners(ctx, lr, keys); err != nil {
		t.Fatal(err)
	}
	t.Logf("ring of %d nodes up, owners agreed, in %s", politeNodes, time.Since(t0).Round(time.Millisecond))

	start := time.Now()
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	reqs := web.Requests()
	t.Logf("day 0: %d requests in %s on %d nodes", len(reqs), elapsed.Round(time.Millisecond), politeNodes)
	robots := checkPoliteRequests(t, web, 0, reqs)

	// Day 1: every known URL is fetched again (conditionally). The
	// robots.txt files are still fresh (RobotsTTL is a day), so they are
	// not fetched again, and the budget holds across both days.
	web.SetDay(1)
	for _, n := range lr.Nodes {
		if err := n.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	elapsed = time.Since(start)
	reqs = web.Requests()
	t.Logf("days 0 and 1: %d requests in %s", len(reqs), elapsed.Round(time.Millisecond))
	checkPoliteRequests(t, web, 1, reqs)

	// Leases, robots records, claims and links went over kept streams
	// (kit.Pool): a node's exchanges with one member seconds apart share
	// one.
	var ses kit.PoolStats
	for _, n := range lr.Nodes {
		st := n.pool.Stats()
		ses.Opened, ses.Reused, ses.Retried = ses.Opened+st.Opened, ses.Reused+st.Reused, ses.Retried+st.Retried
	}
	t.Logf("session exchanges: %+v", ses)
	if ses.Reused == 0 {
		t.Errorf("no exchange went over a kept stream: %+v", ses)
	}

	sum := ringLeases(lr)
	// The local cap (crawl.CapBudget) should cost an honest ring nothing:
	// the requests it held back 10 ms or more after a grant, out of all.
	var held, unconfirmed int64
	for _, n := range lr.Nodes {
		held += n.crawler.Stats().CapHeld
		unconfirmed += n.PolitenessStats().RobotsUnconfirmed
	}
	t.Logf("local cap: held back %d of %d requests (%.2f%%) after an honest grant; robots.txt answers unconfirmed: %d",
		held, len(reqs), 100*float64(held)/float64(len(reqs)), unconfirmed)
	pages := len(reqs) - len(robots)
	t.Logf("leasing: %d remote lease RPCs + %d local leases + %d owner lookups for %d pages: %.3f RPCs/page (%.3f with lookups); slots granted %d, used %d, expired %d; owner failures %d (timeouts %d), fallback waits %d",
		sum.LeaseRPCs, sum.LeaseLocal, sum.OwnerLookups, pages, float64(sum.LeaseRPCs)/float64(pages),
		float64(sum.LeaseRPCs+sum.OwnerLookups)/float64(pages), sum.Granted, sum.Used, sum.Expired, sum.Failures, sum.Timeouts, sum.FallbackWaits)
	t.Logf("robots: asked of owners %d, answered locally as owner %d, served to peers %d, fallback fetches %d",
		sum.RobotsAsked, sum.RobotsLocal, sum.RobotsServed, sum.RobotsFallback)
	if sum.RobotsAsked == 0 || sum.RobotsServed == 0 {
		t.Errorf("robots.txt was never shared between nodes (asked %d, served %d)", sum.RobotsAsked, sum.RobotsServed)
	}
	if sum.LeaseRPCs == 0 {
		t.Error("no slot was leased from another node")
	}
	// An owner that answers after the lease timeout (3 s) is slow, not
	// wrong: under -race at load 20 a few did (11 of 481 RPCs). A refusal
	// or an unreachable owner in a stable ring is a bug, and so are
	// timeouts on more than a tenth of the leases.
	if refused := sum.Failures - sum.Timeouts; refused != 0 || sum.RobotsFallback != 0 {
		t.Errorf("owners failed in a stable ring: %d lease failures besides %d timeouts, %d robots fallbacks", refused, sum.Timeouts, sum.RobotsFallback)
	}
	if sum.Timeouts*10 > sum.LeaseRPCs {
		t.Errorf("%d of %d lease RPCs timed out in a stable ring", sum.Timeouts, sum.LeaseRPCs)
	}
}

// checkPoliteRequests checks what the sample web recorded by the end of
// day (all days so far): no disallowed path, the configured identity on
// every request, every URL reachable on day fetched, at most two
// robots.txt fetches per host (its owner's and its second holder's), and the aggregate rate per host within budget in every 1 s
// and 3 s sliding window. It returns the robots.txt fetches by host.
func checkPoliteRequests(t *testing.T, web *sampleweb.Web, day int, reqs []sampleweb.Request) map[string]int {
	t.Helper()
	byHost := map[string][]time.Time{}
	robots := map[string]int{}
	fetched := map[string]bool{}
	for _, r := range reqs {
		byHost[r.Host] = append(byHost[r.Host], r.Time)
		if r.Path == "/robots.txt" {
			robots[r.Host]++
		}
		if strings.HasPrefix(r.Path, "/private/") {
			t.Errorf("disallowed path fetched: %s%s", r.Host, r.Path)
		}
		if r.UserAgent != politeUA {
			t.Errorf("request %s%s: User-Agent %q, want %q", r.Host, r.Path, r.UserAgent, politeUA)
		}
		if r.From != politeFrom {
			t.Errorf("request %s%s: From %q, want %q", r.Host, r.Path, r.From, politeFrom)
		}
		fetched["http://"+r.Host+r.Path] = true
	}

	// The crawl was complete: every reachable URL was fetched.
	for _, u := range web.Reachable(day) {
		if !fetched[u] {
			t.Errorf("reachable URL never fetched: %s", u)
		}
	}
	for _, seed := range web.Seeds() {
		u, err := url.Parse(seed)
		if err != nil {
			t.Fatal(err)
		}
		if n := robots[u.Host]; n < 1 || n > 2 {
			t.Errorf("robots.txt of %s fetched %d times ring-wide, want 1 or 2 (owner, second holder)", u.Host, n)
		}
	}

	// Aggregate rate per host in every sliding window. The server sees
	// arrivals, not releases: a request delayed on a loaded machine
	// arrives beside the next ones, so a window may hold what the budget
	// released over itself plus arrivalJitter (CI saw 24 and 25 in a 1 s
	// window of budget 23 under load, never more).
	const arrivalJitter = 100 * time.Millisecond
	for host, ts := range byHost {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for _, w := range []time.Duration{time.Second, 3 * time.Second} {
			limit := int(politeRate*(w+arrivalJitter).Seconds()) + politeBurst
			if got := maxInWindow(ts, w); got > limit {
				t.Errorf("host %s: %d requests in a %s window, budget %d (%g/s + burst %d)",
					host, got, w, limit, politeRate, politeBurst)
			}
		}
		if len(ts) > 1 {
			span := ts[len(ts)-1].Sub(ts[0])
			t.Logf("host %s: %d requests in %s: %.1f req/s aggregate, %.1f req/s in the busiest 3s (budget %g/s); max in a 1s window %d, in a 250ms window %d",
				host, len(ts), span.Round(time.Millisecond), float64(len(ts)-1)/span.Seconds(),
				float64(maxInWindow(ts, 3*time.Second))/3, politeRate,
				maxInWindow(ts, time.Second), maxInWindow(ts, 250*time.Millisecond))
		}
	}

	return robots
}

// waitOwners waits until every node finds the true owner of each key and
// only that node claims it.
func waitOwners(ctx context.Context, lr *LocalRing, keys []id.ID) error {
	for {
		err := ringtest.Stable(ctx, lr.rings(), keys)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("owners of the politeness keys not agreed: %w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// maxInWindow returns the largest number of sorted times in any half-open
// window [t, t+w).
func maxInWindow(ts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) < w {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

func TestMaxInWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, tc := range []struct {
		ts   []time.Time
		w    time.Duration
		want int
	}{
		{nil, time.Second, 0},
		{at(0), time.Second, 1},
		{at(0, 999), time.Second, 2},
		{at(0, 1000), time.Second, 1},
		{at(0, 100, 200, 1150, 1160), time.Second, 3},
		{at(0, 0, 0), time.Millisecond, 3},
	} {
		if got := maxInWindow(tc.ts, tc.w); got != tc.want {
			t.Errorf("maxInWindow(%v, %s) = %d, want %d", tc.ts, tc.w, got, tc.want)
		}
	}
}

// TestRobotsProtocolRefusesInternalAndUnowned: a peer asking a node for
// the robots.txt of an origin gets it only when the ring gives that
// origin's robots.txt to the node, and the node's fetch refuses internal
// addresses (its crawl config allows none here): a loopback server never
// sees a request, and nothing of it comes back.
func TestRobotsProtocolRefusesInternalAndUnowned(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "User-agent: *\nDisallow: /admin/keys\n")
	}))
	defer srv.Close()
	lr := startStableRing(ctx, t, t.TempDir(), 2, Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond})
	defer lr.Close()
	origin := srv.URL
	key, err := politeness.RobotsKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	owner := lr.Owner(key)
	other := lr.Nodes[0]
	if other == owner {
		other = lr.Nodes[1]
	}
	ask := func(from, to *Node) politeness.RobotsReply {
		t.Helper()
		var rep politeness.RobotsReply
		if err := rawJSON(ctx, from.host, to.host.ID(), politeness.RobotsProtocol, politeness.RobotsRequest{Origin: origin}, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// The owner is asked: it fetches, and its fetch is refused.
	if rep := ask(other, owner); !strings.Contains(rep.Error, "internal address") {
		t.Fatalf("owner asked for a loopback origin: %+v; want an internal-address refusal", rep)
	}
	// The non-owner is asked (by the owner): refused before any fetch.
	if rep := ask(owner, other); !strings.Contains(rep.Error, "not owned") {
		t.Fatalf("non-owner asked: %+v; want a not-owned refusal", rep)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}
	if got := other.PolitenessStats().RobotsNotOwned; got != 1 {
		t.Fatalf("RobotsNotOwned = %d, want 1", got)
	}
}

// ringLeases sums the ring's nodes' politeness counters.
func ringLeases(lr *LocalRing) PolitenessStats {
	var sum PolitenessStats
	for _, n := range lr.Nodes {
		st := n.PolitenessStats()
		sum.Leases += st.Leases
		sum.LeaseRPCs += st.LeaseRPCs
		sum.LeaseLocal += st.LeaseLocal
		sum.OwnerLookups += st.OwnerLookups
		sum.Granted += st.Granted
		sum.Used += st.Used
		sum.Expired += st.Expired
		sum.Failures += st.Failures
		sum.Timeouts += st.Timeouts
		sum.FallbackWaits += st.FallbackWaits
		sum.RobotsAsked += st.RobotsAsked
		sum.RobotsLocal += st.RobotsLocal
		sum.RobotsFallback += st.RobotsFallback
		sum.RobotsServed += st.RobotsServed
	}
	return sum
}
