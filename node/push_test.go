package node

import (
	"context"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// lagQuantiles returns the upper bounds of the buckets that hold the
// p50 and p99 of the ring's push lags, and the number of observations.
func lagQuantiles(t testing.TB, lr *LocalRing) (p50, p99 time.Duration, n uint64) {
	t.Helper()
	var counts []uint64 // cumulative, summed over the nodes
	var bounds []float64
	for _, nd := range lr.Nodes {
		var m dto.Metric
		if err := nd.repl.LagHistogram().Write(&m); err != nil {
			t.Fatal(err)
		}
		h := m.GetHistogram()
		n += h.GetSampleCount()
		for i, b := range h.GetBucket() {
			if i >= len(counts) {
				counts, bounds = append(counts, 0), append(bounds, b.GetUpperBound())
			}
			counts[i] += b.GetCumulativeCount()
		}
	}
	q := func(p float64) time.Duration {
		for i, c := range counts {
			if float64(c) >= p*float64(n) {
				return time.Duration(bounds[i] * float64(time.Second))
			}
		}
		return time.Duration(math.MaxInt64) // beyond the last bucket
	}
	return q(0.5), q(0.99), n
}

// pushTotals adds up the ring's push counters.
func pushTotals(lr *LocalRing) (copies, bytes, foreign, failed int64) {
	for _, n := range lr.Nodes {
		p := n.ReplicationStats().Push
		copies += p.Copies
		bytes += p.Sent.Bytes() + p.Received.Traffic.Bytes()
		foreign += p.Foreign
		failed += p.Failed
	}
	return
}

// waitPushIdle waits until no node has anything to push or is pushing.
func waitPushIdle(ctx context.Context, t testing.TB, lr *LocalRing) {
	t.Helper()
	for {
		idle := true
		for _, n := range lr.Nodes {
			idle = idle && n.ReplicationIdle()
		}
		if idle {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("push not idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pushWebEnv sets the pages of TestPushReplicatesWithinBound's sample
// web (default 120; 600 is the sample web's own default, 3,435 URLs).
const pushWebEnv = "HEROD_PUSH_PAGES"

// TestPushReplicatesWithinBound is issue 42's first deliverable: with
// replication rounds switched off, the push alone brings every version
// a four-node ring crawls to its k = 3 holders, with a lag (store to a
// replica's confirmed import) whose p99 is within the bound; an in-sync
// round then pulls nothing and costs under 1 KiB a pair; and a version
// stored on an idle ring reaches its replicas within PushDelay plus a
// round trip.
//
//	HEROD_PUSH_PAGES=600 go test ./node -run PushReplicatesWithinBound -v
func TestPushReplicatesWithinBound(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node ring: skipped in -short mode")
	}
	pages := 120
	if p, err := strconv.Atoi(os.Getenv(pushWebEnv)); err == nil && p > 0 {
		pages = p
	}
	ctx, cancel := dayContext(t, 5*time.Minute)
	defer cancel()
	web, lr := startWebAndRing(ctx, t, 4, sampleweb.Config{Hosts: 3, Pages: pages})
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(0) // no rounds: only the push copies
	}
	start := time.Now()
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	crawled := time.Since(start)
	waitPushIdle(ctx, t, lr)
	if err := lr.checkReplicated(ctx); err != nil {
		t.Fatalf("after the push, without a round: %v%s", err, lr.replicationReport())
	}
	versions := countVersions(lr.allVersions(ctx, t))
	p50, p99, obs := lagQuantiles(t, lr)
	copies, bytes, foreign, failed := pushTotals(lr)
	t.Logf("crawl of %d versions in %s (load %s): every one on its 3 holders by the push alone, %s after the crawl ended; lag p50 ≤ %s, p99 ≤ %s (%d copies; %d bytes a copy on the wire, record included; %d stored outside the storer's ranges, %d failed)",
		versions, crawled.Round(time.Millisecond), loadAvg(), (time.Since(start) - crawled).Round(time.Millisecond),
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), obs, bytes/max(copies, 1), foreign, failed)
	// The bound the push must beat whatever the machine's load: the
	// period of the rounds it replaces (the 5 s target on an idle
	// loopback is docs/replicate.md's measured figure).
	if int(copies) < 2*versions || p99 > DefaultReplicationInterval {
		t.Fatalf("push: %d copies of %d versions, p99 %s: want every version twice, p99 ≤ %s", copies, versions, p99, DefaultReplicationInterval)
	}

	// In sync: a round pulls nothing and costs at most 1 KiB a pair.
	before := lr.replicationTotals()
	for _, n := range lr.Nodes {
		if err := n.Replicate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lr.waitReplicationIdle(ctx, t)
	after := lr.replicationTotals()
	pairs := after.Pairs - before.Pairs
	perPair := (after.Syncs.Traffic.Bytes() - before.Syncs.Traffic.Bytes()) / max(pairs, 1)
	t.Logf("in-sync round after the push: %d pairs, %d bytes a pair, %d pulled", pairs, perPair, after.Syncs.Pulled-before.Syncs.Pulled)
	if after.Syncs.Pulled != before.Syncs.Pulled || pairs == 0 || perPair > 1024 {
		t.Fatalf("in-sync round: pulled %d over %d pairs, %d bytes a pair", after.Syncs.Pulled-before.Syncs.Pulled, pairs, perPair)
	}

	// On an idle ring, one version stored by its owner is on its replicas
	// within PushDelay plus a round trip.
	u := "http://push.example/idle"
	key := id.OfString(u)
	owner := lr.Owner(key)
	stored := time.Now()
	v, added, err := owner.store.Put(ctx, archive.Capture{URL: u, Time: stored, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>idle</p>")})
	if err != nil || !added {
		t.Fatalf("put: %v, %v", added, err)
	}
	hs := lr.holders(key, ReplicationFactor)
	for {
		all := true
		for _, h := range hs {
			if has, _ := h.store.HasVersion(u); !has {
				all = false
			}
		}
		if all {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s not on its holders", v.Entry().Name())
		}
		time.Sleep(time.Millisecond)
	}
	idle := time.Since(stored)
	t.Logf("idle ring: one version on its %d holders %s after its store (PushDelay %s)", len(hs), idle.Round(time.Millisecond), ReplicationPushDelay)
	if idle > ReplicationPushDelay+2*time.Second {
		t.Fatalf("idle push took %s", idle)
	}
	fams, err := owner.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(fams, func(f *dto.MetricFamily) bool {
		return f.GetName() == "herod_replication_push_lag_seconds" && f.GetMetric()[0].GetHistogram().GetSampleCount() > 0
	}) {
		t.Fatal("/metrics has no push lag histogram")
	}
}

// TestURLNeverForgotten is issue 42's second deliverable: a node crashes
// right after the day's crawl, before any replication round (rounds are
// off) and before a new day could share its known set; the sample web
// never changes, so no page's links travel again. Still, on each of the
// next two days, every URL the ring requested on the first is requested
// again, and every URL robots.txt refuses (known, with no version) is
// checked again, by either of two paths alone: the push (the versions and
// the URLs the victim learned reached their holders), or the re-forward
// after the take-over (every node sends the links of its pages into the
// ranges taken over once more; the push's two hooks unset). The run
// with neither is the baseline, logged.
func TestURLNeverForgotten(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node rings over three days: skipped in -short mode")
	}
	base := crashAfterCrawl(t, false, false)
	for _, c := range []struct {
		name            string
		push, reforward bool
	}{{"push alone", true, false}, {"re-forward alone", false, true}} {
		with := crashAfterCrawl(t, c.push, c.reforward)
		t.Logf("%s: %d take-overs announced, %d spans re-forwarded, %d links re-forwarded", c.name, with.announced, with.spans, with.links)
		if c.reforward && with.links == 0 {
			t.Errorf("%s: no link re-forwarded", c.name)
		}
		for i, day := range with.days {
			b := base.days[i]
			t.Logf("%s: day %d after the crash: %d of %d URLs requested, %d of %d robots checks; with neither: %d of %d, %d of %d",
				c.name, i+2, day.requested, with.known, day.robots, with.refused, b.requested, base.known, b.robots, base.refused)
			if day.requested != with.known || day.robots != with.refused {
				t.Errorf("%s: day %d after the crash: never requested: %s; robots checks %d, want %d", c.name, i+2, head(day.missing), day.robots, with.refused)
			}
		}
	}
}

// crashRun is what crashAfterCrawl saw.
type crashRun struct {
	known   int   // URLs requested on the first day
	refused int64 // URLs refused by robots.txt on the first day
	// announced counts the take-overs the survivors announced, spans
	// the spans they re-forwarded and links the links they sent for them.
	announced, spans, links int64
	days                    []crashDay
}

// crashDay is one day after the crash.
type crashDay struct {
	requested int // of the first day's URLs
	missing   []string
	robots    int64 // robots.txt refusals
}

// crashAfterCrawl runs TestURLNeverForgotten's scenario on a new ring,
// with the push or without it, with the re-forward after a take-over or
// without it, and reports the two days after the crash.
func crashAfterCrawl(t *testing.T, push, reforward bool) crashRun {
	ctx, cancel := dayContext(t, 3*time.Minute)
	defer cancel()
	web, lr := startWebAndRing(ctx, t, 4, sampleweb.Config{Hosts: 3, Pages: 60})
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(0)
		n.quietTakeOver.Store(!reforward)
		if !push {
			n.store.OnAdd(nil)
			n.crawler.OnKnown(nil)
		}
	}
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	waitPushIdle(ctx, t, lr)
	known := sortedKeys(requestsPerURL(web))
	run := crashRun{known: len(known), refused: robotsRefused(lr)}
	if run.refused == 0 {
		t.Fatal("the test needs URLs without versions (robots refusals)")
	}
	victim := lr.Nodes[1]
	owned := 0
	for _, u := range known {
		if lr.Owner(id.OfString(u)) == victim {
			owned++
		}
	}
	if owned == 0 {
		t.Fatal("the victim owns none of the URLs")
	}
	victim.crash()
	lr.Nodes = slices.Delete(lr.Nodes, 1, 2)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil { // mid-day take-overs
		t.Fatal(err)
	}
	for _, n := range lr.Nodes {
		st := n.links.ReforwardStats()
		run.announced += st.Announced
		run.spans += st.Spans
		run.links += st.Links
	}
	for range 2 {
		web.ResetRequests()
		newDayAll(ctx, t, lr)
		got := requestsPerURL(web)
		d := crashDay{robots: robotsRefused(lr)}
		for _, u := range known {
			if got[u] == 0 {
				d.missing = append(d.missing, u)
			}
		}
		d.requested = len(known) - len(d.missing)
		run.days = append(run.days, d)
	}
	return run
}
