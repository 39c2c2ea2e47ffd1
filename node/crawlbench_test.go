//go:build unix

package node

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/benchsite"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/node/status"
	"github.com/herod-archive/herod/ring/claim"
)

// crawlbench_test.go is issue 5's crawl-rate benchmark: pages/s of one
// herod node crawling a static site on loopback, next to wget -r on the
// same site in the same run, and of a ring of several nodes on the same
// machine next to one node. It is off by default (it takes about a minute);
// scripts/bench-crawl.sh runs it:
//
//	go test ./node -run TestCrawlRate -crawlbench -v

var (
	crawlBench       = flag.Bool("crawlbench", false, "run TestCrawlRate: herod vs wget -r pages/s on a loopback static site")
	crawlBenchPages  = flag.Int("crawlbench.pages", 3000, "HTML pages in the static site (images, CSS and scripts come on top)")
	crawlBenchRounds = flag.Int("crawlbench.rounds", 3, "interleaved rounds; the median of each contestant is reported")
	crawlBenchRing   = flag.Int("crawlbench.ring", 4, "nodes in the multi-node ring")
	crawlBenchConns  = flag.Int("crawlbench.hostconns", 2, "herod crawl.Config.HostConns per node (wget uses one connection)")
	crawlBenchBudget = flag.String("crawlbench.budget", "ring", `herod's per-host pacing: "ring" (the shipped ring-wide budget at HostRate 1e9) or "none" (no pacing at all)`)
	crawlBenchFlush  = flag.Duration("crawlbench.flush", 0, "herod Config.FlushInterval (0: the node default)")
	crawlBenchGzip   = flag.Int("crawlbench.gzip", 0, "herod Config.GzipLevel (0: the archive default)")
	crawlBenchDict   = flag.Int("crawlbench.dict", 0, "herod Config.DictSamples (0: the archive default; -1: no dictionary, gzip records)")
	crawlBenchNoSync = flag.Bool("crawlbench.nosync", false, "herod Config.NoSync: no file or index syncs (not durable; shows what syncing costs)")
	crawlBenchInProc = flag.Bool("crawlbench.inproc", false, "serve the site from the test process (default: a process of its own, as for wget)")
	crawlBenchProf   = flag.String("crawlbench.windowprofile", "", "write a CPU profile of each herod crawl's timed window (the clock's, not the run's) to <prefix>-herodN.prof")
	crawlBenchOnly   = flag.String("crawlbench.only", "", "comma-separated contestants to run (wget, goget, gogetbusy, herod1, herodN), e.g. for -cpuprofile")
	crawlBenchToday  = flag.Bool("crawlbench.formedtoday", false, "crawl on the day the ring formed, when every range was taken today and each fetch is first claimed from its former owner (default: the nodes start a new day once the ring is stable, as on every day but the one a ring forms)")
)

// benchSeed fixes the static site's bytes.
const benchSeed = 5

// crawlResult is one timed crawl of the whole site.
type crawlResult struct {
	elapsed time.Duration
	cpu     time.Duration    // CPU of the crawler: wget's process, or this process's for herod
	rec     benchsite.Record // what the server answered
	busy    float64          // machine-wide share of all cores busy while it ran (kernel threads too), or -1
}

func (c crawlResult) rate() float64 { return float64(len(c.rec.Paths)) / c.elapsed.Seconds() }

// TestCrawlRate is issue 5's pages/s benchmark. In one run it writes a
// deterministic static site, serves it on loopback from a process of its
// own (startSiteProcess; with -crawlbench.inproc from this one), and times
// wget -r, one herod node and a ring of -crawlbench.ring nodes crawling
// all of it, and a bare Go client fetching it with and without a busy
// goroutine beside it (runGoGet), rounds times interleaved (the machine is
// shared and noisy), reporting
// each contestant's median. herod runs with storing, hashing, indexing and
// link forwarding as shipped, but with no per-host rate limit (HostRate
// 1e9) so that it is compared with wget, which has none either; each node
// keeps HostConns connections to the site (-crawlbench.hostconns, default 2; wget uses one). With
// -crawlbench.budget=none the node's ring-wide host budget is replaced by
// one that never waits, which shows what the budget itself costs.
//
// The clock starts when the ring is stable and the root URL is seeded, and
// stops when every URL has been answered and stored; the ring must then go
// idle without storing or fetching anything more.
func TestCrawlRate(t *testing.T) {
	if !*crawlBench {
		t.Skip("enable with -crawlbench (see scripts/bench-crawl.sh)")
	}
	wget, err := exec.LookPath("wget")
	if err != nil {
		t.Fatal("wget not installed (scripts/bench-crawl.sh installs it)")
	}
	t.Logf("GOMAXPROCS %d on %d CPUs", runtime.GOMAXPROCS(0), runtime.NumCPU())
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := sampleweb.WriteStaticSite(site, *crawlBenchPages, benchSeed); err != nil {
		t.Fatal(err)
	}
	want := sampleweb.StaticSitePaths(*crawlBenchPages, benchSeed)
	urlBytes := 0
	for _, p := range want {
		urlBytes += len(p)
	}
	var srv *benchsite.Remote
	if *crawlBenchInProc {
		srv = startSiteInProcess(t, site)
	} else {
		srv = startSiteProcess(t, site)
	}
	meanURL := func() float64 { // the site's absolute URLs, as forwarded
		return float64(urlBytes)/float64(len(want)) + float64(len(strings.TrimSuffix(srv.URL(), "/")))
	}
	t.Logf("herod: HostRate 1e9 (no per-host rate limit), HostConns %d per node, host budget %q, FlushInterval %v (0: default), gzip level %d (0: default), NoSync %v",
		*crawlBenchConns, *crawlBenchBudget, *crawlBenchFlush, *crawlBenchGzip, *crawlBenchNoSync)
	t.Logf("site: %d HTML pages, %d URLs (robots.txt aside) at %s; files under %s", *crawlBenchPages, len(want), srv.URL(), dir)

	ringName := fmt.Sprintf("herod%d", *crawlBenchRing)
	type contestant struct {
		name string
		run  func(t *testing.T, out string) crawlResult
	}
	all := []contestant{
		{"wget", func(t *testing.T, out string) crawlResult { return runWget(t, wget, srv, out) }},
		{"goget", func(t *testing.T, _ string) crawlResult { return runGoGet(t, srv, want, 0) }},
		{"gogetbusy", func(t *testing.T, _ string) crawlResult { return runGoGet(t, srv, want, 1) }},
		{"herod1", func(t *testing.T, out string) crawlResult { return runHerod(t, srv, out, 1, len(want), meanURL()) }},
		{ringName, func(t *testing.T, out string) crawlResult {
			return runHerod(t, srv, out, *crawlBenchRing, len(want), meanURL())
		}},
	}
	if *crawlBenchOnly != "" {
		keep := strings.Split(*crawlBenchOnly, ",")
		all = slices.DeleteFunc(all, func(c contestant) bool { return !slices.Contains(keep, c.name) })
	}
	results := map[string][]crawlResult{}
	for round := range *crawlBenchRounds {
		// Rotate the order so that no contestant always runs first.
		for i := range all {
			c := all[(i+round)%len(all)]
			if err := srv.Reset(); err != nil {
				t.Fatal(err)
			}
			// Each crawl's output stays until the test ends: deleting
			// thousands of files between runs would slow the next
			// contestant's file creation on a file system without a
			// journal (ext4 then skips every inode freed in the last 60 s,
			// 360 s while its inode table block is dirty, one buffer
			// lookup each), which measures the harness, not the crawler.
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", c.name, round))
			// Write back what the previous contestant left dirty (wget
			// never syncs): on ext4 with a journal the next fsync, herod's
			// first, would otherwise wait for all of it (a 100+ ms stall).
			syscall.Sync()
			res := c.run(t, out)
			if d := diffPaths(res.rec.Paths, want); d != "" {
				t.Errorf("%s round %d fetched a different URL set than the site has: %s", c.name, round, d)
			}
			results[c.name] = append(results[c.name], res)
			t.Logf("round %d %-9s %5d URLs (%d requests) in %7s = %6.0f pages/s, cpu %s, server idle %s (%d stalls of 100ms+), machine busy %.0f%%, load %s",
				round, c.name, len(res.rec.Paths), res.rec.Requests, res.elapsed.Round(time.Millisecond), res.rate(),
				res.cpu.Round(time.Millisecond), res.rec.Idle.Round(time.Millisecond), res.rec.Stalls, 100*res.busy, loadAvg())
		}
	}
	reportCrawlRates(t, results, ringName)
}

// reportCrawlRates logs the median of each contestant and the ratios, and
// prints benchmark-format lines that benchstat reads.
func reportCrawlRates(t *testing.T, results map[string][]crawlResult, ringName string) {
	med := map[string]crawlResult{}
	for _, name := range []string{"wget", "goget", "gogetbusy", "herod1", ringName} {
		rs := results[name]
		if len(rs) == 0 {
			continue
		}
		m := medianResult(rs)
		med[name] = m
		perPage := float64(m.cpu.Microseconds()) / float64(max(len(m.rec.Paths), 1))
		t.Logf("median %-9s %5d URLs in %7s = %6.0f pages/s, crawler CPU %4.0f µs/page (%d runs)",
			name, len(m.rec.Paths), m.elapsed.Round(time.Millisecond), m.rate(), perPage, len(rs))
		fmt.Printf("BenchmarkCrawlRate/%s \t%d\t%.0f ns/op\t%.1f pages/s\t%d urls\t%.0f cpu-µs/page\n",
			name, len(rs), float64(m.elapsed.Nanoseconds()), m.rate(), len(m.rec.Paths), perPage)
	}
	if w, h := med["wget"], med["herod1"]; w.elapsed > 0 && h.elapsed > 0 {
		t.Logf("ratio herod1/wget = %.2f (target >= 1.0); URL counts: wget %d, herod %d", h.rate()/w.rate(), len(w.rec.Paths), len(h.rec.Paths))
		fmt.Printf("BenchmarkCrawlRate/ratio-herod1-wget \t1\t0 ns/op\t%.3f x\n", h.rate()/w.rate())
	}
	if h1, hn := med["herod1"], med[ringName]; h1.elapsed > 0 && hn.elapsed > 0 {
		t.Logf("ratio %s/herod1 = %.2f", ringName, hn.rate()/h1.rate())
		fmt.Printf("BenchmarkCrawlRate/ratio-%s-herod1 \t1\t0 ns/op\t%.3f x\n", ringName, hn.rate()/h1.rate())
	}
}

// loadAvg returns the one-minute load average, or "?" where unknown: the
// machine is shared, and the rates mean little without it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// machineTicks is the machine-wide CPU time from /proc/stat, in clock
// ticks: all of it, and the part spent idle or waiting for I/O.
type machineTicks struct{ total, idle uint64 }

// readMachineTicks reads /proc/stat's aggregate line; zero where there is
// none.
func readMachineTicks() machineTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return machineTicks{}
	}
	var m machineTicks
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return machineTicks{}
		}
		m.total += v
		if i == 3 || i == 4 { // idle, iowait
			m.idle += v
		}
	}
	return m
}

// busySince returns the share of all cores' time that was busy between
// m0 and m (kernel threads and other processes included), or -1 when it
// cannot tell.
func (m machineTicks) busySince(m0 machineTicks) float64 {
	if m.total <= m0.total || m0.total == 0 {
		return -1
	}
	return 1 - float64(m.idle-m0.idle)/float64(m.total-m0.total)
}

// medianResult returns the result with the median rate.
func medianResult(rs []crawlResult) crawlResult {
	s := slices.Clone(rs)
	sort.Slice(s, func(i, j int) bool { return s[i].rate() < s[j].rate() })
	return s[len(s)/2]
}

// runWget times wget -r over the whole site into out.
func runWget(t *testing.T, wget string, srv *benchsite.Remote, out string) crawlResult {
	t.Helper()
	cmd := exec.Command(wget, "-r", "-l", "inf", "-np", "-nH", "-q", "-P", out, srv.URL())
	start, busy0 := time.Now(), readMachineTicks()
	b, err := cmd.CombinedOutput()
	elapsed, busy := time.Since(start), readMachineTicks().busySince(busy0)
	if err != nil {
		t.Fatalf("wget: %v\n%s", err, b)
	}
	files := 0
	filepath.WalkDir(out, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files++
		}
		return nil
	})
	rec, err := srv.Record()
	if err != nil {
		t.Fatal(err)
	}
	if files < len(rec.Paths) {
		t.Errorf("wget saved %d files for %d URLs", files, len(rec.Paths))
	}
	st := cmd.ProcessState
	return crawlResult{elapsed: elapsed, cpu: st.UserTime() + st.SystemTime(), rec: rec, busy: busy}
}

// runHerod starts a ring of count nodes under dir, seeds it with the site's
// root and times the crawl until the server has answered all want URLs
// (whose mean length is meanURLLen, for the links' wire cost) and
// the ring has stored as many versions. The ring is formed and stable
// before the clock starts; the clock stops when the last page is stored
// (links still waiting in a forwarder then are all duplicates). The ring
// must then go idle having stored nothing more, fetched no URL twice and
// counted no crawl error.
func runHerod(t *testing.T, srv *benchsite.Remote, dir string, count, want int, meanURLLen float64) crawlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cc := crawl.Config{HostRate: 1e9, HostConns: *crawlBenchConns, AllowPrivate: loopback}
	switch *crawlBenchBudget {
	case "ring":
	case "none":
		cc.Budget = noBudget{}
	default:
		t.Fatalf("-crawlbench.budget %q: want ring or none", *crawlBenchBudget)
	}
	lr := startStableRing(ctx, t, dir, count, Config{Crawl: cc, FlushInterval: *crawlBenchFlush, GzipLevel: *crawlBenchGzip, DictSamples: *crawlBenchDict, NoSync: *crawlBenchNoSync})
	defer lr.Close()
	if !*crawlBenchToday {
		// No range was taken today: no fetch is claimed from a former
		// owner.
		if err := lr.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stored := lr.NewVersions
	wire0, calls0 := ringTraffic(lr)
	if *crawlBenchProf != "" {
		f, err := os.Create(fmt.Sprintf("%s-herod%d.prof", *crawlBenchProf, count))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	cpu0, busy0 := processCPU(), readMachineTicks()
	start := time.Now()
	if err := lr.Nodes[0].Seed(ctx, []string{srv.URL()}); err != nil {
		t.Fatal(err)
	}
	// Done when every URL was answered and as many versions are stored
	// (the server is asked only once the versions are there).
	distinct := func() int {
		n, err := srv.Distinct()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for stored() < int64(want) || distinct() < want {
		if err := ctx.Err(); err != nil {
			t.Fatalf("herod x%d: stored %d of %d: %v", count, stored(), want, err)
		}
		time.Sleep(5 * time.Millisecond) // polling a real crawl: 5ms is the timing resolution
	}
	elapsed, cpu, busy := time.Since(start), processCPU()-cpu0, readMachineTicks().busySince(busy0)
	if *crawlBenchProf != "" {
		pprof.StopCPUProfile()
	}
	{
		wire, calls := ringTraffic(lr)
		for _, p := range slices.Sorted(maps.Keys(wire)) {
			if d := wire[p] - wire0[p]; d > 0 {
				t.Logf("herod x%d wire %-24s %8d bytes out, %6.1f a page", count, p, d, float64(d)/float64(want))
			}
		}
		var claims claim.Stats
		for _, nd := range lr.Nodes {
			cs := nd.claims.Stats()
			claims.Sent, claims.Refused = claims.Sent+cs.Sent, claims.Refused+cs.Refused
		}
		t.Logf("herod x%d streams: ring calls %d; claims %d, %d of them refused and asked again",
			count, calls-calls0, claims.Sent, claims.Refused)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	var answered int64
	var response float64
	for _, nd := range lr.Nodes {
		st := nd.crawler.Stats()
		answered, response = answered+st.FetchedToday, response+st.ResponseSec
	}
	t.Logf("herod x%d requests: %d, %.0f us on average from request to response headers", count, answered, 1e6*response/float64(max(answered, 1)))
	n := stored()
	if n != int64(want) {
		t.Errorf("herod x%d stored %d versions, want %d", count, n, want)
	}
	for _, nd := range lr.Nodes {
		if errs := nd.crawler.Stats().ErrorsByKind; len(errs) > 0 {
			t.Errorf("herod x%d: crawl errors %v", count, errs)
		}
	}
	ps := ringLeases(lr)
	var handed, skipped, delivered, overHops, direct, remote, walks, hops int64
	for _, nd := range lr.Nodes {
		fs := nd.fwd.Stats()
		handed += nd.crawler.Stats().Forwarded
		skipped += fs.Skipped
		delivered += fs.Sent + fs.Local
		remote += fs.Sent
		walks += fs.Walks
		hops += fs.Hops
		overHops += nd.links.Stats().OverHops
		direct += fs.Direct
	}
	wire, _ := ringTraffic(lr)
	wireOut := wire[string(linksProtocol)]
	if remote > 0 {
		t.Logf("herod x%d links on the wire: %d walks, %d batches, %d links sent to other nodes in %d bytes of %s streams, %.1f bytes a link (mean URL %.1f bytes)",
			count, walks, hops, remote, wireOut, linksProtocol, float64(wireOut)/float64(remote), meanURLLen)
	}
	t.Logf("herod x%d links: %d handed to the forwarders (%.1f per page), %d not queued again, %d delivered (%d of them passed straight to a closer owner), %d queued by a non-owner at the hop limit",
		count, handed, float64(handed)/float64(want), skipped, delivered, direct, overHops)
	t.Logf("herod x%d host budget: %d leases (%d over the network), slots granted %d, used %d, expired %d; %d fallback waits",
		count, ps.Leases, ps.LeaseRPCs, ps.Granted, ps.Used, ps.Expired, ps.FallbackWaits)
	rec, err := srv.Record()
	if err != nil {
		t.Fatal(err)
	}
	if k := len(rec.Repeated); k > 0 {
		t.Errorf("herod x%d fetched %d URLs more than once, e.g. %v", count, k, rec.Repeated[:min(k, 5)])
		logRepeats(t, lr, srv.URL(), rec.Repeated[:min(k, 5)])
	}
	if err := lr.Close(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("close ring: %v", err)
	}
	return crawlResult{elapsed: elapsed, cpu: cpu, rec: rec, busy: busy}
}

// ringTraffic sums over the ring's nodes the bytes sent per protocol
// and the ring calls made, since they started.
func ringTraffic(lr *LocalRing) (map[string]int64, uint64) {
	wire := map[string]int64{}
	var calls uint64
	for _, nd := range lr.Nodes {
		for _, w := range status.Wire(nd.bwc) {
			wire[w.Protocol] += w.Out
		}
		c, _ := nd.tr.CallStats()
		calls += c
	}
	return wire, calls
}

// logRepeats logs, for URLs fetched more than once ("/path xN"), which
// nodes stored a version and which own the URL now, and each node's count
// of links queued after too many hops: what is needed to tell overlapping
// ranges from links accepted at the hop limit.
func logRepeats(t *testing.T, lr *LocalRing, base string, repeated []string) {
	t.Helper()
	for i, nd := range lr.Nodes {
		t.Logf("node %d: %d links queued after %d hops (not owned)", i, nd.links.Stats().OverHops, forward.MaxHops)
	}
	for _, r := range repeated {
		path, _, _ := strings.Cut(r, " ")
		u := strings.TrimSuffix(base, "/") + path
		var stored, owners []int
		for i, nd := range lr.Nodes {
			if vs, err := nd.store.Versions(context.Background(), u); err == nil && len(vs) > 0 {
				stored = append(stored, i)
			}
			if nd.ownsURL(u) {
				owners = append(owners, i)
			}
		}
		t.Logf("%s: stored by nodes %v, owned now by %v", u, stored, owners)
	}
}

// runGoGet times a plain net/http client that GETs every path of the site
// one after another over one connection, discarding each body, with busy
// goroutines beside it that compress a buffer in a loop: with busy 0 the
// floor for any Go crawler on this machine, with busy 1 what one core's
// worth of CPU work in the same process does to its requests (herod's
// storing and parsing is such work). Its CPU figure includes the busy
// goroutines'.
func runGoGet(t *testing.T, srv *benchsite.Remote, paths []string, busy int) crawlResult {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range busy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			burnCPU(stop)
		}()
	}
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	base := strings.TrimSuffix(srv.URL(), "/")
	cpu0, busy0 := processCPU(), readMachineTicks()
	start := time.Now()
	for _, p := range paths {
		resp, err := client.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", p, resp.StatusCode, err)
		}
	}
	elapsed, cpu, machine := time.Since(start), processCPU()-cpu0, readMachineTicks().busySince(busy0)
	close(stop)
	wg.Wait()
	// The server records a request after its handler returns, which can
	// be just after the client has read the whole response.
	_ = testwait.Until(10*time.Second, func() bool {
		n, err := srv.Distinct()
		return err != nil || n >= len(paths)
	})
	rec, err := srv.Record()
	if err != nil {
		t.Fatal(err)
	}
	return crawlResult{elapsed: elapsed, cpu: cpu, rec: rec, busy: machine}
}

// burnCPU gzips a page-sized buffer over and over until stop is closed.
func burnCPU(stop <-chan struct{}) {
	const text = "<p>Lorem ipsum dolor sit amet, <a href=\"/x\">consectetur</a></p>\n"
	buf := make([]byte, 20<<10)
	for i := range buf {
		buf[i] = text[(i*7)%len(text)]
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
		w.Write(buf)
		w.Close()
	}
}

// noBudget is a crawl.HostBudget that never waits.
type noBudget struct{}

func (noBudget) Wait(ctx context.Context, _ string, _ time.Duration) error { return ctx.Err() }

// processCPU returns the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// diffPaths describes how got differs from the sorted want, or returns "".
func diffPaths(got, want []string) string {
	extra, missing := minus(got, want), minus(want, got)
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("%d URLs vs %d; extra %v; missing %v", len(got), len(want), extra, missing)
}

// serveSite serves dir with a recording file server, and its recorder on
// a control listener of its own, in this process until stop is called.
func serveSite(dir string) (r *benchsite.Remote, stop func(), err error) {
	srv := benchsite.New(benchsite.Config{Dir: dir})
	if err := srv.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	ctl := &http.Server{Handler: srv.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	go ctl.Serve(ln)
	stop = func() {
		ctl.Close()
		srv.Close()
	}
	return benchsite.NewRemote(srv.URL(), "http://"+ln.Addr().String()+"/"), stop, nil
}

// startSiteInProcess serves dir from this process until the test ends.
// herod's crawl then shares the Go scheduler with the file server, which
// measured faster for herod than a separate server process on the 2-core
// VM (docs/crawl.md); wget always talks to another process.
func startSiteInProcess(t *testing.T, dir string) *benchsite.Remote {
	t.Helper()
	r, stop, err := serveSite(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return r
}

// benchSiteEnv names the directory that TestCrawlBenchSite serves.
const benchSiteEnv = "HEROD_CRAWLBENCH_SITE"

// startSiteProcess serves dir from a process of its own (this test binary
// running TestCrawlBenchSite), as a real site is served from another
// machine: in herod's process the file server's goroutines would queue in
// the same Go scheduler as herod's, which wget's run does not suffer. The
// process exits when the test ends.
func startSiteProcess(t *testing.T, dir string) *benchsite.Remote {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrawlBenchSite$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchSiteEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the site process: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close() // the site process exits at EOF
		if err := cmd.Wait(); err != nil {
			t.Errorf("site process: %v", err)
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "benchsite" {
			go io.Copy(io.Discard, stdout)
			return benchsite.NewRemote(f[1], f[2])
		}
	}
	t.Fatalf("site process did not report its address (%v)", sc.Err())
	return nil
}

// TestCrawlBenchSite is the file server process of TestCrawlRate
// (startSiteProcess); it skips unless started by it. It prints
// "benchsite <site URL> <control URL>" and serves until its standard input
// closes.
func TestCrawlBenchSite(t *testing.T) {
	dir := os.Getenv(benchSiteEnv)
	if dir == "" {
		t.Skip("the site process of TestCrawlRate")
	}
	r, stop, err := serveSite(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fmt.Printf("benchsite %s %s\n", r.URL(), r.ControlURL())
	io.Copy(io.Discard, os.Stdin)
}
