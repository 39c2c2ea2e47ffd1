package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/realweb"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/node/politeness"
	"github.com/herod-archive/herod/node/replication"
	nodesearch "github.com/herod-archive/herod/node/search"
	"github.com/herod-archive/herod/ring"
)

// TestProcessesRingOverhead is the process mode of the realistic ring
// overhead benchmark (scripts/bench-ring-realistic.sh with PROCESSES=1;
// node.TestRingOverheadRealistic is the in-process one): one herod run
// process, then a ring of HEROD_REALWEB_RING (4) processes replicating
// with k = 3, crawl internal/realweb (served by this test's process),
// HEROD_REALWEB_ROUNDS (2) times alternated. Each crawl's CPU is the
// sum over its processes of user and system time (/proc/<pid>/stat)
// from the seed until the stores hold min(3, nodes) copies of every
// version. The ring crawls on the day it formed (as FORMEDTODAY=1 in
// process). HEROD_REALWEB_POLITE=0 crawls at 500 requests/s per host,
// else at 1. HEROD_CPUPROFILE=DIR writes each process's CPU profile
// under DIR/round<r>-nodes<n>/.
func TestProcessesRingOverhead(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" || os.Getenv("HEROD_REALWEB") != "1" {
		t.Skipf("runs herod processes for minutes: set %s=1 HEROD_REALWEB=1", processTestsEnv)
	}
	count := envPositive("HEROD_REALWEB_RING", 4)
	rounds := envPositive("HEROD_REALWEB_ROUNDS", 2)
	rate := "1"
	if os.Getenv("HEROD_REALWEB_POLITE") == "0" {
		rate = "500"
	}
	wcfg := realweb.ConfigFromEnv()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	web, err := realweb.Start(ctx, wcfg)
	if err != nil {
		t.Skipf("realweb cannot listen: %v", err)
	}
	defer web.Close()
	want := int64(wcfg.Objects())
	var ratios []float64
	for r := range rounds {
		order := []int{1, count}
		if r%2 == 1 {
			order = []int{count, 1}
		}
		var per [2]float64
		for _, n := range order {
			cpu, wall := crawlProcesses(t, n, rate, web.Seeds(), want, profileDir(r, n))
			p := cpu.Seconds() / float64(want) * 1000
			t.Logf("realweb processes: round=%d nodes=%d host_rate=%s pages=%d wall_s=%.1f cpu_s=%.2f cpu_s_per_1000=%.3f",
				r, n, rate, want, wall.Seconds(), cpu.Seconds(), p)
			per[min(n-1, 1)] = p
		}
		ratios = append(ratios, per[1]/per[0])
		t.Logf("realweb processes: round=%d ratio=%.2f (CPU per page, %d processes over 1)", r, per[1]/per[0], count)
	}
	slices.Sort(ratios)
	med := (ratios[(len(ratios)-1)/2] + ratios[len(ratios)/2]) / 2
	t.Logf("realweb processes: median ratio=%.2f of %.2f", med, ratios)
}

// profileDir is where the processes of round r's crawl by n nodes write
// their CPU profiles: a directory under HEROD_CPUPROFILE, or "" (none).
func profileDir(r, n int) string {
	dir := os.Getenv(cpuProfileEnv)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("round%d-nodes%d", r, n))
}

// crawlProcesses starts count herod processes (k = 3), seeds the first
// with seeds (profiles: their CPU profiles' directory, or "") and returns the CPU the processes used from the seed until
// their stores held min(3, count) copies of want versions, and the wall
// time.
func crawlProcesses(t *testing.T, count int, rate string, seeds []string, want int64, profiles string) (time.Duration, time.Duration) {
	t.Helper()
	r := newProcRing(t, 24*time.Hour)
	r.quiet = true // debug logs cost the ring more CPU than the one node
	if profiles != "" {
		r.env = append(r.env, cpuProfileEnv+"="+profiles)
	}
	r.extra = []string{"--host-rate", rate, "--replicas", "3", "--replication-interval", "30s"}
	first := r.start(nil, "")
	nodes := []*proc{first}
	for range count - 1 {
		nodes = append(nodes, r.start(nil, first.multiaddr))
	}
	testwait.For(t, "the ring's idle start", time.Minute, func() bool { return ringIdle(nodes) })
	time.Sleep(3 * time.Second) // the ring stabilizes: successor lists fill
	copies := int64(min(3, count))
	cpu0 := procsCPU(t, nodes)
	start := time.Now()
	seed := exec.Command(r.bin, append([]string{"seed", "--node", "http://" + first.gateway + "/", "--data", first.data}, seeds...)...)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("herod seed: %v\n%s", err, out)
	}
	// The nodes' status is read every 250 ms, not at testwait's 50: each
	// read renders a node's whole status, CPU the crawl would be charged
	// with (about 0.4 CPU-s a ring crawl at 50 ms).
	deadline := time.Now().Add(20 * time.Minute)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var trace []string // versions stored, replication rounds run, records pushed short, every 2 s: a slow crawl, or copies that lag
	for next := 2 * time.Second; ; {
		v, rounds, short := ringProgress(nodes)
		if el := time.Since(start); el >= next {
			trace = append(trace, fmt.Sprintf("%ds %d r%d s%d", int(el/time.Second), v, rounds, short))
			next += 2 * time.Second
		}
		if v >= copies*want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d copies of %d versions: not within 20m (%d versions stored)", copies, want, v)
		}
		<-tick.C
	}
	cpu, wall := procsCPU(t, nodes)-cpu0, time.Since(start)
	t.Logf("realweb processes: versions stored (of %d), r replication rounds, s records pushed to fewer than k-1 replicas: %s",
		copies*want, strings.Join(trace, ", "))
	logCopies(t, nodes)
	for _, p := range nodes {
		r.remove(p, syscall.SIGTERM)
	}
	return cpu, wall
}

// ringProgress returns the versions the processes store, the
// replication rounds they ran and the records they pushed to fewer than
// k-1 replicas, summed, from one status read of each (all -1 when one
// does not answer).
func ringProgress(ps []*proc) (versions, rounds, short int64) {
	for _, p := range ps {
		st, err := status(p)
		if err != nil {
			return -1, -1, -1
		}
		var a struct {
			Versions int64 `json:"versions"`
		}
		var rp struct {
			Rounds int64                 `json:"rounds"`
			Push   replication.PushStats `json:"push"`
		}
		if json.Unmarshal(st["archive"], &a) != nil || json.Unmarshal(st["replication"], &rp) != nil {
			return -1, -1, -1
		}
		versions += a.Versions
		rounds += rp.Rounds
		short += rp.Push.Short
	}
	return versions, rounds, short
}

// logCopies logs how the processes' copies were made: imported by the
// push and by rounds, and offered or listed records found already held.
func logCopies(t *testing.T, ps []*proc) {
	t.Helper()
	type copies struct {
		Pulled  int64 `json:"pulled"`
		Present int64 `json:"present"`
	}
	var push, rounds copies
	var offers, reads int64
	var lost replication.PushStats // what the push left to rounds
	var errs []string              // each node's last replication error
	var polite politeness.Stats
	var searchSync nodesearch.SyncStats
	var rc ring.Counters
	var sessions kit.PoolStats
	dicts := map[string]int{}
	wire := map[string]int64{} // bytes sent, by protocol
	for _, p := range ps {
		st, err := status(p)
		if err != nil {
			t.Logf("realweb processes: status: %v", err)
			return
		}
		var r struct {
			Syncs     copies                `json:"syncs"`
			Push      replication.PushStats `json:"push"`
			LastError string                `json:"last_error"`
		}
		var rg struct {
			Counters ring.Counters `json:"counters"`
		}
		var se nodesearch.Stats
		var pl politeness.Stats
		var ss kit.PoolStats
		for name, v := range map[string]any{"replication": &r, "ring": &rg, "search": &se, "politeness": &pl, "sessions": &ss} {
			if err := json.Unmarshal(st[name], v); err != nil {
				t.Logf("realweb processes: %s status: %v", name, err)
				return
			}
		}
		var ar struct {
			Dictionary string `json:"dictionary"`
		}
		if err := json.Unmarshal(st["archive"], &ar); err == nil {
			dicts[ar.Dictionary]++
		}
		var ws []struct {
			Protocol string `json:"protocol"`
			Out      int64  `json:"out"`
		}
		if err := json.Unmarshal(st["wire"], &ws); err == nil {
			for _, w := range ws {
				wire[w.Protocol] += w.Out
			}
		}
		rc.Calls += rg.Counters.Calls
		rc.Lookups += rg.Counters.Lookups
		rc.LocalLookups += rg.Counters.LocalLookups
		rc.Hops += rg.Counters.Hops
		searchSync.Rounds += se.Sync.Rounds
		searchSync.Scans += se.Sync.Scans
		searchSync.Served += se.Sync.Served
		searchSync.InSync += se.Sync.InSync
		searchSync.Pulled += se.Sync.Pulled
		searchSync.Bytes += se.Sync.Bytes
		push.Pulled += r.Push.Received.Pulled
		push.Present += r.Push.Received.Present
		rounds.Pulled += r.Syncs.Pulled
		rounds.Present += r.Syncs.Present
		offers += r.Push.Offers
		reads += r.Push.Received.Traffic.Requests
		lost.Queued += r.Push.Queued
		lost.Dropped += r.Push.Dropped
		lost.Foreign += r.Push.Foreign
		lost.Short += r.Push.Short
		lost.Retried += r.Push.Retried
		lost.Failed += r.Push.Failed
		lost.Repairs += r.Push.Repairs
		lost.Known += r.Push.Known
		lost.KnownShared += r.Push.KnownShared
		lost.KnownRetried += r.Push.KnownRetried
		lost.KnownFailed += r.Push.KnownFailed
		if r.LastError != "" {
			errs = append(errs, r.LastError)
		}
		polite.LeaseRPCs += pl.LeaseRPCs
		polite.OwnerLookups += pl.OwnerLookups
		polite.Granted += pl.Granted
		polite.Used += pl.Used
		polite.Expired += pl.Expired
		sessions.Opened += ss.Opened
		sessions.Reused += ss.Reused
		sessions.Retried += ss.Retried
	}
	t.Logf("realweb processes: copies: push imported %d (%d offers, %d reads from owners, %d offered already held), rounds imported %d (%d already held)",
		push.Pulled, offers, reads, push.Present, rounds.Pulled, rounds.Present)
	t.Logf("realweb processes: push: %d records queued, %d dropped by a full queue, %d foreign, %d to fewer than k-1 replicas, %d retried, %d copies failed, %d repairs",
		lost.Queued, lost.Dropped, lost.Foreign, lost.Short, lost.Retried, lost.Failed, lost.Repairs)
	t.Logf("realweb processes: known URLs: %d learned, %d shared, %d shared again after a failure, %d given up (left to the daily share)",
		lost.Known, lost.KnownShared, lost.KnownRetried, lost.KnownFailed)
	for _, e := range errs {
		t.Logf("realweb processes: a node's last replication error: %.300s", e)
	}
	t.Logf("realweb processes: search sync: %d rounds, %d scans for digests, %d requests served, %d range pairs in sync, %d postings pulled, %d bytes",
		searchSync.Rounds, searchSync.Scans, searchSync.Served, searchSync.InSync, searchSync.Pulled, searchSync.Bytes)
	t.Logf("realweb processes: politeness: %d lease round trips, %d owner lookups; slots %d granted, %d used, %d expired",
		polite.LeaseRPCs, polite.OwnerLookups, polite.Granted, polite.Used, polite.Expired)
	t.Logf("realweb processes: sessions (claims, links, leases, robots): %d exchanges on a stream opened for them, %d on a kept one, %d sent again",
		sessions.Opened, sessions.Reused, sessions.Retried)
	t.Logf("realweb processes: ring: %d lookups and Successors, %d answered from the local tables, %d lookup hops; %d ring calls since start",
		rc.Lookups, rc.LocalLookups, rc.Hops, rc.Calls)
	t.Logf("realweb processes: dictionaries: %d trained, %d adopted, %d none", dicts["trained"], dicts["adopted"], dicts[""])
	var sent []string
	for _, p := range slices.Sorted(maps.Keys(wire)) {
		if wire[p] >= 1<<20 {
			sent = append(sent, fmt.Sprintf("%s %.1f", p, float64(wire[p])/(1<<20)))
		}
	}
	t.Logf("realweb processes: MiB sent, by protocol (1 MiB or more): %s", strings.Join(sent, ", "))
}

// procsCPU sums the user and system time of the processes so far, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s: Linux's
// USER_HZ).
func procsCPU(t *testing.T, ps []*proc) time.Duration {
	t.Helper()
	var ticks int64
	for _, p := range ps {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			t.Fatalf("process CPU: %v", err)
		}
		// The command name (field 2) is in parentheses and may hold spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		for _, i := range []int{11, 12} { // utime, stime: fields 14, 15
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatalf("process CPU: field %d: %v", i+3, err)
			}
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// envPositive reads a positive integer from the environment, or returns
// def.
func envPositive(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
