package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/internal/testwait"
)

// TestProcessesIdle measures what a ring of 4 herod processes (k = 3)
// costs while it has nothing to do: they crawl a sample web, replicate
// and index it, stop (SIGTERM) and start again on their data; once the
// ring is idle and replicated the test counts the processes' CPU over
// HEROD_IDLE_SECONDS (60). HEROD_CPUPROFILE=DIR profiles the processes
// in DIR/crawl and, from their restart to their stop, DIR/idle. Run with
// HEROD_PROCESS_TESTS=1.
func TestProcessesIdle(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skipf("runs herod processes for minutes: set %s=1", processTestsEnv)
	}
	window := time.Duration(envPositive("HEROD_IDLE_SECONDS", 60)) * time.Second
	ctx := context.Background()
	web := sampleweb.New(sampleweb.Config{Hosts: 3, Pages: 200})
	if err := web.Start(ctx); err != nil {
		t.Skipf("sample web cannot listen on 127.0.0.2-4: %v", err)
	}
	defer web.Close()
	r := newProcRing(t, 24*time.Hour)
	r.quiet = true
	r.extra = []string{"--replicas", "3", "--replication-interval", "30s"} // as shipped, not the tests' 1 s
	profiles := os.Getenv(cpuProfileEnv)
	if profiles != "" {
		r.env = append(r.env, cpuProfileEnv+"="+filepath.Join(profiles, "crawl"))
	}
	nodes := r.startRing(4)
	first := nodes[0]
	r.seed(first, web.Seeds())
	testwait.For(t, "the crawl", 5*time.Minute, func() bool { return r.versions() > 0 && ringIdle(nodes) && indexIdle(nodes) })
	r.waitReplicated(t, "the crawl replicated", 3*time.Minute)

	for _, p := range nodes {
		r.remove(p, syscall.SIGTERM)
	}
	if profiles != "" {
		r.env = append(r.env, cpuProfileEnv+"="+filepath.Join(profiles, "idle")) // the last of a key is the one used
	}
	restarted := []*proc{r.start(first, "")}
	for _, p := range nodes[1:] {
		restarted = append(restarted, r.start(p, first.multiaddr))
	}
	start := time.Now()
	r.waitReplicated(t, "the restarted ring replicated", 3*time.Minute)
	testwait.For(t, "the index idle", time.Minute, func() bool { return indexIdle(restarted) })
	settled := time.Since(start)
	cpu0 := procsCPU(t, restarted)
	time.Sleep(window)
	cpu := procsCPU(t, restarted) - cpu0
	perMin := cpu.Seconds() / window.Minutes()
	t.Logf("idle ring: 4 processes, %d versions, settled %.0f s after the restart; %.2f CPU-s over %v: %.2f CPU-s a minute together, %.3f of a core each",
		r.versions(), settled.Seconds(), cpu.Seconds(), window, perMin, perMin/60/4)
	if perMin > 20 {
		t.Errorf("an idle ring of 4 uses %.1f CPU-s a minute", perMin)
	}
	for _, p := range restarted {
		r.remove(p, syscall.SIGTERM) // a profile is written at a clean stop
	}
}
