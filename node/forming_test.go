package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// TestFormingRingFetchesOnce is issue 17's acceptance on real libp2p
// hosts: 4–8 nodes join one after another with random delays while the
// first one is seeded at once, and every URL must be requested at the
// site exactly once on the day. HEROD_FORMING_ROUNDS sets how many
// timings are tried (issue 17 asks for 20).
//
// It runs only when HEROD_FORMING_ROUNDS is set: a round takes a few
// seconds (more on a loaded machine). The same acceptance runs in the
// simulator by default (ring/sim TestFetchOncePerDay).
func TestFormingRingFetchesOnce(t *testing.T) {
	s := os.Getenv("HEROD_FORMING_ROUNDS")
	if s == "" {
		t.Skip("issue 17's forming-ring acceptance: set HEROD_FORMING_ROUNDS=20 to run it")
	}
	var rounds int
	if _, err := fmt.Sscan(s, &rounds); err != nil {
		t.Fatalf("HEROD_FORMING_ROUNDS=%q: %v", s, err)
	}
	// HEROD_FORMING_FIRST starts at another timing (to repeat one).
	first := 0
	if s := os.Getenv("HEROD_FORMING_FIRST"); s != "" {
		if _, err := fmt.Sscan(s, &first); err != nil {
			t.Fatalf("HEROD_FORMING_FIRST=%q: %v", s, err)
		}
	}
	var urls, dups, missing int
	for r := range rounds {
		u, d, m := formingRound(t, uint64(first+r))
		urls += u
		dups += d
		missing += m
	}
	t.Logf("%d rounds: %d URLs, %d fetched more than once (%.1f per 10,000), %d reachable never fetched",
		rounds, urls, dups, 1e4*float64(dups)/float64(max(urls, 1)), missing)
	if dups > 0 || missing > 0 {
		t.Errorf("%d duplicate fetches, %d reachable URLs never fetched", dups, missing)
	}
}

// formingRound runs one forming ring with the timings of seed and returns
// how many URLs the site saw, how many of them were requested twice, and
// how many reachable URLs were never requested.
func formingRound(t *testing.T, seed uint64) (urls, dups, missing int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 17))
	count := 4 + rng.IntN(5)
	web := sampleweb.New(sampleweb.Config{Hosts: 3, Pages: 100, Seed: int64(seed)})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	// HEROD_FORMING_TRACE=1 logs, for each duplicate and each URL never
	// fetched, the debug lines that name it: claims and their answers,
	// links sent and received, entries passed on, links not queued or not
	// sent because seen today.
	var trace *lockedBuffer
	if os.Getenv("HEROD_FORMING_TRACE") != "" {
		trace = &lockedBuffer{}
	}
	base := Config{
		VirtualServers:    4,
		StabilizeInterval: 100 * time.Millisecond,
		FlushInterval:     20 * time.Millisecond,
		// Slow enough that the crawl goes on while the nodes join.
		Crawl: crawl.Config{HostRate: 80, Concurrency: 16, AllowPrivate: loopback},
	}
	start := func(i int, join string) *Node {
		cfg := base
		cfg.DataDir = filepath.Join(dir, fmt.Sprintf("node%d", i))
		cfg.Listen, cfg.Gateway = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Crawl.UserAgent = fmt.Sprintf("node%d", i) // which node fetched, in the site's log
		if trace != nil {
			cfg.Logger = slog.New(slog.NewTextHandler(trace, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", i)
		}
		if join != "" {
			cfg.Join = []string{join}
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			n.Close()
			t.Fatalf("node %d: %v", i, err)
		}
		return n
	}
	lr := &LocalRing{Nodes: []*Node{start(0, "")}}
	defer func() { lr.Close() }()
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	// The others join through the first, each after a random delay, some
	// of them at the same time.
	delays := make([]time.Duration, count-1)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(2000)) * time.Millisecond
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	join := lr.Nodes[0].Multiaddr()
	for i, d := range delays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(d)
			n := start(i+1, join)
			mu.Lock()
			lr.Nodes = append(lr.Nodes, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatalf("round %d: %v (virtual-server ids run by two nodes: %v)", seed, err, sharedIDs(lr))
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	var overHops, stale, checks, taken, claims, claimsTaken, unanswered, elsewhere, cut, refused int64
	var twins uint64
	for _, n := range lr.Nodes {
		twins += n.ring.Counters().Twins
		overHops += n.links.Stats().OverHops
		checks += n.reloc.OwnerChecks()
		taken += n.takeOver.Taken()
		stale += n.crawler.Stats().PassedOn
		cs := n.claims.Stats()
		claims += cs.Sent
		claimsTaken += cs.Taken
		unanswered += cs.Unanswered
		elsewhere += cs.Elsewhere
		cut += cs.Cut
		refused += cs.Refused
	}
	got := requestsPerURL(web)
	for u, c := range got {
		if c > 1 {
			dups++
			if dups <= 5 {
				var when []string
				for _, r := range web.Requests() {
					if "http://"+r.Host+r.Path == u {
						when = append(when, fmt.Sprintf("%s %s cond=%v %d", r.Time.Format("05.000"), r.UserAgent, r.Conditional, r.Status))
					}
				}
				t.Logf("round %d: %s requested %d times: %v", seed, u, c, when)
				if trace != nil {
					for _, l := range trace.lines() {
						if strings.Contains(l, u) || (dups == 1 && strings.Contains(l, "took a range")) {
							t.Log("  ", l)
						}
					}
				}
			}
		}
	}
	if left, _, _ := sampleweb.OncePerURL(web.Reachable(0), got); trace != nil && (dups > 0 || len(left) > 0) {
		// Refusals by the trust gate, and virtual servers moved off a
		// twin's id or not joined after a move.
		n := 0
		for _, l := range trace.lines() {
			if (strings.Contains(l, "not a ring member") || strings.Contains(l, "ring: cannot") || strings.Contains(l, "moved to other indexes")) && n < 30 {
				t.Log("  ", l)
				n++
			}
		}
	}
	t.Logf("round %d: %d nodes, joins after %v: %d URLs, %d requested more than once; %d links queued at the hop limit, %d fetch-time checks asked the ring, %d entries passed on, %d vnodes moved off a twin's id, %d URLs queued by mid-day take-overs, %d claims sent (%d found taken, %d unanswered, %d answered elsewhere, %d chains cut at the hop limit, %d refused for now and asked again)",
		seed, count, delays, len(got), dups, overHops, checks, stale, twins, taken, claims, claimsTaken, unanswered, elsewhere, cut, refused)
	// And none is left out: every page reachable from the seeds is
	// fetched on the day.
	left, _, _ := sampleweb.OncePerURL(web.Reachable(0), got)
	if len(left) > 0 {
		t.Logf("round %d: %d reachable URLs never requested, e.g. %v", seed, len(left), left[:min(len(left), 3)])
		for i, n := range lr.Nodes {
			cs := n.crawler.Stats()
			t.Logf("  node %d: queued %d, in flight %d, pending %v, errors %v", i, cs.Queued, cs.InFlight, n.crawler.Queued(), cs.ErrorsByKind)
		}
		if trace != nil {
			for _, u := range left[:min(len(left), 3)] {
				for _, l := range trace.lines() {
					if strings.Contains(l, u) {
						t.Log("  ", l)
					}
				}
			}
		}
	}
	return len(got), dups, len(left)
}

// sharedIDs lists the virtual-server ids that more than one node runs.
func sharedIDs(lr *LocalRing) []string {
	by := map[string]int{}
	for _, n := range lr.Nodes {
		for _, v := range n.ring.Vnodes() {
			by[v.ID.Short()]++
		}
	}
	var out []string
	for k, c := range by {
		if c > 1 {
			out = append(out, fmt.Sprintf("%s×%d", k, c))
		}
	}
	return out
}

// lockedBuffer collects log lines from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(b.buf.String(), "\n")
}
