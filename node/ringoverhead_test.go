package node

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/realweb"
)

// TestRealwebServe is the server process of TestRingOverheadRealistic.
func TestRealwebServe(t *testing.T) {
	if os.Getenv(realweb.ServeEnv) != "1" {
		t.Skip("the server process of TestRingOverheadRealistic")
	}
	if err := realweb.Serve(); err != nil {
		t.Fatal(err)
	}
}

// TestRingOverheadRealistic measures what crawling as a ring costs where
// the users are (scripts/bench-ring-realistic.sh): one node, then a ring
// of HEROD_REALWEB_RING nodes (default 4) in this process, crawl all of
// realweb (220 hosts, answers 20-80 ms late, served by a process of its
// own; see crawl.TestRealisticCrawl) from its roots, HEROD_REALWEB_ROUNDS
// times alternated (default 2). Each ring is stable and starts a new day
// before the clock starts, as on every day but the one a ring forms
// (HEROD_REALWEB_FORMEDTODAY=1: it crawls on the day it formed, claiming
// each fetch from the range's former owner). Replication, which one node
// does not do, is off in both. Politeness is the shipped 1 request a
// second per host, ring-wide (HEROD_REALWEB_POLITE=0: no budget at all).
// With HEROD_REALWEB_REPLICAS=k the ring replicates as shipped (push and
// rounds, k copies) and its clock stops once its stores hold k copies of
// every version. It logs the CPU seconds per 1,000 pages of each and the
// median of the rounds' ratios, ring over one node.
func TestRingOverheadRealistic(t *testing.T) {
	if os.Getenv("HEROD_REALWEB") != "1" {
		t.Skip("the realistic ring overhead benchmark: HEROD_REALWEB=1 (scripts/bench-ring-realistic.sh)")
	}
	count := envInt("HEROD_REALWEB_RING", 4)
	rounds := envInt("HEROD_REALWEB_ROUNDS", 2)
	polite := os.Getenv("HEROD_REALWEB_POLITE") != "0"
	newDay := os.Getenv("HEROD_REALWEB_FORMEDTODAY") != "1"
	replicas := envInt("HEROD_REALWEB_REPLICAS", 0)
	wcfg := realweb.ConfigFromEnv()
	seeds, stop, err := realweb.Spawn("TestRealwebServe")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var ratios []float64
	for r := range rounds {
		var cpu [2]float64
		for i, n := range []int{1, count} {
			if r%2 == 1 {
				n = []int{count, 1}[i] // alternate which goes first
			}
			c, wall := crawlRealweb(t, n, seeds, wcfg.Objects(), polite, newDay, replicas)
			per := c.Seconds() / float64(wcfg.Objects()) * 1000
			t.Logf("realweb ring: round=%d nodes=%d replicas=%d polite=%t new_day=%t pages=%d wall_s=%.1f pages_per_s=%.1f cpu_s=%.2f cpu_s_per_1000=%.3f",
				r, n, replicas, polite, newDay, wcfg.Objects(), wall.Seconds(), float64(wcfg.Objects())/wall.Seconds(), c.Seconds(), per)
			if n == 1 {
				cpu[0] = per
			} else {
				cpu[1] = per
			}
		}
		ratios = append(ratios, cpu[1]/cpu[0])
		t.Logf("realweb ring: round=%d ratio=%.2f (CPU per page, %d nodes over 1)", r, cpu[1]/cpu[0], count)
	}
	slices.Sort(ratios)
	med := (ratios[(len(ratios)-1)/2] + ratios[len(ratios)/2]) / 2
	t.Logf("realweb ring: median ratio=%.2f of %.2f", med, ratios)
}

// crawlRealweb starts a stable ring of count nodes (with newDay, on a
// new day), seeds it with the web's roots and returns the CPU this
// process used until the ring stored want versions, and the wall time.
// With replicas > 0 the ring replicates (k = replicas, push and rounds as
// shipped), and the clock stops once its stores hold min(replicas, count)
// copies of each version.
func crawlRealweb(t *testing.T, count int, seeds []string, want int, polite, newDay bool, replicas int) (time.Duration, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cc := crawl.Config{AllowPrivate: loopback}
	if !polite {
		cc.HostRate, cc.Budget = 1e6, noBudget{}
	}
	cfg := Config{Crawl: cc, ReplicationInterval: -1}
	copies := 1
	if replicas > 0 {
		cfg.ReplicationInterval, cfg.Replicas, copies = 0, replicas, min(replicas, count)
	}
	lr := startStableRing(ctx, t, t.TempDir(), count, cfg)
	defer lr.Close()
	if newDay {
		if err := lr.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stored := lr.NewVersions
	held := func() (sum int64) { // versions in the stores, copies included
		for _, nd := range lr.Nodes {
			sum += nd.store.Stats().Versions
		}
		return sum
	}
	cpu0, start := processCPU(), time.Now()
	if err := lr.Nodes[0].Seed(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	for stored() < int64(want) || held() < int64(copies*want) {
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d nodes: stored %d of %d, %d copies of %d: %v", count, stored(), want, held(), copies*want, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cpu, wall := processCPU()-cpu0, time.Since(start)
	for _, nd := range lr.Nodes {
		if errs := nd.crawler.Stats().ErrorsByKind; len(errs) > 0 {
			t.Errorf("%d nodes: crawl errors %v", count, errs)
		}
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := stored(); n != int64(want) {
		t.Errorf("%d nodes stored %d versions, want %d", count, n, want)
	}
	return cpu, wall
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
