package crawl

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/realweb"
)

// The realistic crawl benchmark (scripts/bench-realistic.sh): one crawler
// with the real archive.Store crawls a realweb of 220 hosts, each
// response 20-80 ms late, some trickled, one large object per host, served
// by a process of its own. Environment:
//
//	HEROD_REALWEB=1                 run it (skipped otherwise)
//	HEROD_REALWEB_POLITE=0          no per-host budget (default 1 req/s per host)
//	HEROD_REALWEB_CONCURRENCY=n     Config.Concurrency (default: the crawler's default)
//	HEROD_REALWEB_HOSTS, _PAGES     the web's size (default realweb's)
//
// Until commit 57b3fd7 it also switched the special machinery since
// removed (an own HTTP/1.1 client, cpugate, TuneGC, deferred
// compression); docs/crawl.md has what it measured.
//
// It logs one line "realweb: key=value ..." with pages/s, CPU seconds per
// 1,000 pages, peak RSS, and three ratios to the wall time: politeness
// (the busiest host's objects at its rate), latency (the served delays
// summed, over Concurrency) and CPU (CPU seconds over the CPUs). The
// largest is what limits the crawl.

// TestRealwebServe is the server process of TestRealisticCrawl.
func TestRealwebServe(t *testing.T) {
	if os.Getenv(realweb.ServeEnv) != "1" {
		t.Skip("the server process of TestRealisticCrawl")
	}
	if err := realweb.Serve(); err != nil {
		t.Fatal(err)
	}
}

func TestRealisticCrawl(t *testing.T) {
	if os.Getenv("HEROD_REALWEB") != "1" {
		t.Skip("the realistic crawl benchmark: HEROD_REALWEB=1 (scripts/bench-realistic.sh)")
	}
	polite := os.Getenv("HEROD_REALWEB_POLITE") != "0"
	wcfg := realweb.ConfigFromEnv()
	seeds, stop, err := realweb.Spawn("TestRealwebServe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	cfg := Config{AllowPrivate: loopback, HostRate: 1e6}
	cfg.Concurrency, _ = strconv.Atoi(os.Getenv("HEROD_REALWEB_CONCURRENCY"))
	cfg = cfg.withDefaults()
	if polite {
		cfg.HostRate = DefaultHostRate
		cfg.Budget = nil
	}
	dir := t.TempDir()
	st, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &storeArchive{Store: st}
	f := &loopForwarder{}
	c, err := New(filepath.Join(dir, "queue"), cfg, depsOf(a, f))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c

	cpu0 := cpuTime(t)
	start := time.Now()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	for !c.Idle() {
		time.Sleep(5 * time.Millisecond)
	}
	wall := time.Since(start)
	cpu := cpuTime(t) - cpu0
	c.Close()
	st.Close()
	if got, want := a.stored(), wcfg.Objects(); got != want {
		t.Fatalf("stored %d objects, want %d (stats %+v)", got, want, c.Stats())
	}

	n := float64(a.stored())
	perHost := float64(wcfg.ObjectsPerHost())
	politeBound := 0.0
	if polite {
		politeBound = (perHost - 1) / cfg.HostRate
	}
	latencyBound := servedDelays(wcfg) / float64(cfg.Concurrency)
	cpuBound := cpu.Seconds() / float64(runtime.NumCPU())
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("realweb: variant=plain polite=%t concurrency=%d pages=%d wall_s=%.2f pages_per_s=%.1f cpu_s_per_1000=%.3f peak_rss_mb=%.0f politeness=%.2f latency=%.2f cpu=%.2f",
		polite, cfg.Concurrency, int(n), wall.Seconds(), n/wall.Seconds(), cpu.Seconds()/n*1000, float64(ru.Maxrss)/1024,
		politeBound/wall.Seconds(), latencyBound/wall.Seconds(), cpuBound/wall.Seconds())
}

// servedDelays sums, in seconds, the time the web makes a complete crawl
// wait: every object's delay and the trickled bodies.
func servedDelays(cfg realweb.Config) float64 {
	var sum time.Duration
	pages := cfg.ObjectsPerHost() - 6
	hosts := cfg.Objects() / cfg.ObjectsPerHost()
	for h := range hosts {
		paths := []string{"/", "/css/site.css", "/img/big.png", "/img/0.png", "/img/1.png", "/img/2.png"}
		for p := range pages {
			paths = append(paths, "/p/"+strconv.Itoa(p)+".html")
		}
		for _, p := range paths {
			sum += realweb.Delay(h, p)
			if realweb.Slow(h, p) {
				sum += realweb.SlowBody
			}
		}
	}
	return sum.Seconds()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
