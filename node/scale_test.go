//go:build linux

package node

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/replication"
)

// scale_test.go is issue 40's scale benchmark (docs/scale.md): one node
// crawls a synthetic web (scripts/scale/webgen, a process of its own) for
// a number of compressed days, each day starting when the last is idle,
// and reports per day what grows with URLs and days. Run it with
// scripts/scale/run.sh, or
//
//	HEROD_SCALE=10000:30 go test ./node -run '^TestScale$' -v -timeout 0
//
// HEROD_SCALE is urls:days; HEROD_SCALE_OUT is the directory the rows go
// to (scale-<urls>x<days>.csv and .json; default the test's temp dir);
// HEROD_SCALE_WEBGEN a built webgen (default: built here);
// HEROD_SCALE_SEED the web's seed (default 1); HEROD_SCALE_HEAPPROFILE=1
// writes a heap profile at each day's end next to the rows;
// HEROD_SCALE_CPUPROFILE=N a CPU profile of day N; HEROD_SCALE_NODES=N
// crawls with a ring of N nodes in the process (k = 3 replicas, rounds
// run at each day's end until in sync; default 1: no replication), whose
// rows go to scale-<urls>x<days>x<N>n; HEROD_SCALE_HOSTRATE the requests a
// second to one host (default 1e9: no politeness wait).

// scaleRow is one day of a scale run.
type scaleRow struct {
	URLs          int     `json:"urls"`  // pages of the web on day 0
	Nodes         int     `json:"nodes"` // nodes of the ring, in one process
	Day           int     `json:"day"`
	Live          int     `json:"live"`          // pages the web has today
	Fetched       int64   `json:"fetched"`       // requests answered today
	NewVersions   int64   `json:"newVersions"`   // versions stored today
	NotModified   int64   `json:"notModified"`   // 304 answers
	NotFound      int64   `json:"notFound"`      // 404 answers the web gave
	Errors        int64   `json:"errors"`        // crawl errors counted today
	WallS         float64 `json:"wallS"`         // the day, rollover included
	CPUS          float64 `json:"cpuS"`          // process CPU over the day
	CPUPer1000    float64 `json:"cpuPer1000"`    // CPU seconds per 1,000 requests answered
	PagesPerS     float64 `json:"pagesPerS"`     // requests answered per wall second
	RSSPeakMB     float64 `json:"rssPeakMB"`     // VmHWM over the day (reset at its start)
	HeapPeakMB    float64 `json:"heapPeakMB"`    // live Go heap objects, highest sample
	Goroutines    int     `json:"goroutines"`    // highest sample
	OpenFiles     int     `json:"openFiles"`     // highest sample
	DiskMB        float64 `json:"diskMB"`        // data directory at the day's end
	DiskAddedMB   float64 `json:"diskAddedMB"`   // over the day
	BytesPerCheck float64 `json:"bytesPerCheck"` // disk added ÷ requests that stored no new version (new versions' bytes included)
	// The archive index's files at the day's end (every node's
	// DATA/archive/index: versions, host entries, crawl states, the
	// days' checks, the hash tree) and their bytes per version the
	// stores hold (copies included).
	IndexMB              float64 `json:"indexMB"`
	IndexBytesPerVersion float64 `json:"indexBytesPerVersion"`
	RolloverS            float64 `json:"rolloverS"`     // NewDay's duration (0 on day 0)
	SwitchMS             float64 `json:"switchMs"`      // of which the switch, holding the day's lock
	IntakeStallMS        float64 `json:"intakeStallMs"` // longest Add of one link over the day
	RollStallMS          float64 `json:"rollStallMs"`   // longest Add of one link that overlapped the rollover
	LoopStallMS          float64 `json:"loopStallMs"`   // longest host-loop queue read wait over the day
	Queued               int64   `json:"queued"`        // queue entries just after the rollover
	Known                int64   `json:"known"`         // known URLs at the day's end
	Mine                 int     `json:"mine"`          // the claims' fetch set held in memory at the day's end
	ReplayP50MS          float64 `json:"replayP50Ms"`   // gateway replays during the crawl
	ReplayP99MS          float64 `json:"replayP99Ms"`
	ReplayOK             int     `json:"replayOK"` // replays answered 200
	CDXMS                float64 `json:"cdxMs"`    // one host's CDX query during the crawl
	CDXRows              int     `json:"cdxRows"`
	SearchTailS          float64 `json:"searchTailS"` // after the crawl, until every node's search indexer was idle
	SweepS               float64 `json:"sweepS"`      // the day-end link sweep of every node (Node.SweepLinks)
	// SearchDropped counts the versions the search queues dropped that
	// day (every node), each left to a catch-up that indexes again
	// what was stored since; a crawl that outran its indexer pauses
	// instead (node/search Service.Behind).
	SearchDropped int64 `json:"searchDropped"`
	// With more than one node: the versions the stores hold (copies
	// included) at the day's end, the replication traffic over the day
	// (pushes and rounds, both directions), the rounds of every node run
	// after the crawl until one pulled nothing, and that last round's
	// bytes per (range, replica) pair.
	Held          int64   `json:"held,omitempty"`
	ReplMB        float64 `json:"replMB,omitempty"`
	ReplRounds    int     `json:"replRounds,omitempty"`
	InSyncPerPair float64 `json:"inSyncBytesPerPair,omitempty"`
	// And the distinct versions of the ring, and the copies of them
	// missing from their ReplicationFactor holders (ringCopies).
	Versions      int64 `json:"versions,omitempty"`
	CopiesMissing int64 `json:"copiesMissing,omitempty"`
	// Each goleveldb database's compaction reads and writes over the
	// day and its level sizes at the day's end (scaledb_test.go; also
	// in scale-<urls>x<days>-dbs.csv).
	DBs []scaleDB `json:"dbs,omitempty"`
	// The Go collector over the day (runtime/metrics): cycles, the
	// runtime's estimate of its CPU (/cpu/classes/gc/total: mark
	// workers, assists and pauses, not sweeping; an overestimate by its
	// own account) and the bytes allocated per request answered.
	GCCycles   uint64  `json:"gcCycles"`
	GCCPUS     float64 `json:"gcCpuS"`
	AllocKBPer float64 `json:"allocKBPerRequest"`
}

func TestScale(t *testing.T) {
	spec := os.Getenv("HEROD_SCALE")
	if spec == "" {
		t.Skip("set HEROD_SCALE=urls:days (see scripts/scale/run.sh)")
	}
	us, ds, ok := strings.Cut(spec, ":")
	urls, err1 := strconv.Atoi(us)
	days, err2 := strconv.Atoi(ds)
	if !ok || err1 != nil || err2 != nil || urls < 100 || days < 1 {
		t.Fatalf("HEROD_SCALE=%q: want urls:days, urls >= 100 and days >= 1", spec)
	}
	nodes := 1
	if v := os.Getenv("HEROD_SCALE_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 16 {
			t.Fatalf("HEROD_SCALE_NODES=%q: want 1 to 16", v)
		}
		nodes = n
	}
	name := fmt.Sprintf("%dx%d", urls, days)
	if nodes > 1 {
		name += fmt.Sprintf("x%dn", nodes)
	}
	seed := os.Getenv("HEROD_SCALE_SEED")
	if seed == "" {
		seed = "1"
	}
	out := os.Getenv("HEROD_SCALE_OUT")
	if out == "" {
		out = t.TempDir()
	}
	dir := t.TempDir()
	web := startWebgen(t, dir, urls, seed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rate := 1e9
	if v := os.Getenv("HEROD_SCALE_HOSTRATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r > 0) {
			t.Fatalf("HEROD_SCALE_HOSTRATE=%q: want requests a second, over 0", v)
		}
		rate = r
	}
	cc := crawl.Config{HostRate: rate, HostConns: 2, AllowPrivate: loopback}
	cfg := Config{Crawl: cc}
	if nodes > 1 {
		cfg.ReplicationInterval = -1 // rounds at each day's end: replicateDay
	}
	lr := startStableRing(ctx, t, filepath.Join(dir, "ring"), nodes, cfg)
	defer lr.Close()
	if err := lr.NewDay(ctx); err != nil { // a day the ring did not form on
		t.Fatal(err)
	}
	nd := lr.Nodes[0]
	var data []string
	for i := range nodes {
		data = append(data, filepath.Join(dir, "ring", fmt.Sprintf("node%d", i)))
	}
	smp := newScaleSampler()
	go smp.run(ctx)
	probe := newIntakeProbe(nd, web.roots[0])
	go probe.run(ctx)
	var rows []scaleRow
	disk0 := diskUsage(data...)
	marks := levelMarks{}
	var leases0 PolitenessStats // the ring's lease counts at the day's start
	for d := range days {
		if err := web.setDay(d); err != nil {
			t.Fatal(err)
		}
		resetPeakRSS()
		smp.reset()
		probe.reset()
		probe.pause(false)
		stopProfile := startCPUProfile(t, out, name, d)
		cpu0, start, repl0, dbs0 := processCPU(), time.Now(), replTraffic(lr), ringDBCounters(lr, marks)
		gc0 := readGCCounters()
		dropped0 := searchDropped(lr)
		var roll time.Duration
		if d == 0 {
			if err := nd.Seed(ctx, web.roots); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := lr.NewDay(ctx); err != nil {
				t.Fatal(err)
			}
			roll = time.Since(start)
		}
		rollEnd := time.Now()
		queued := ringCrawlStats(lr).Queued
		ws, err := web.stats()
		if err != nil {
			t.Fatal(err)
		}
		// Replays and a CDX query once half the day's pages are answered.
		var rep replayStats
		for ringCrawlStats(lr).FetchedToday < int64(ws.Live/2) && !ringIdle(lr) {
			time.Sleep(50 * time.Millisecond) // polling a real crawl
		}
		rep = web.replay(t, nd, urls, d)
		// The probe's fresh URLs stop with the crawl: one fetched after
		// the day's last replication round would be on one node when
		// the copies are counted (its push still waiting).
		probe.pause(true)
		if err := lr.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		// The day's pages are indexed for search and their links swept
		// within the day, whatever its length: a compressed day of 10 K
		// URLs ends before a sweep is due, one of 1 M leaves the
		// indexer's dropped versions to the next day's catch-up.
		afterCrawl := time.Now()
		for _, n := range lr.Nodes {
			for !n.search.Idle() {
				time.Sleep(50 * time.Millisecond) // polling a real indexer
			}
		}
		searchDone := time.Now()
		for _, n := range lr.Nodes {
			if _, err := n.SweepLinks(ctx); err != nil {
				t.Logf("scale: day %d: link sweep: %v", d, err)
			}
		}
		tail := dayTail{search: searchDone.Sub(afterCrawl), sweep: time.Since(searchDone)}
		var rounds int
		var inSync float64
		var lost string // copies missing, described (ringCopies)
		if nodes > 1 {
			rounds, inSync = replicateDay(ctx, t, lr)
		}
		wall, cpu := time.Since(start), processCPU()-cpu0
		gc := readGCCounters().since(gc0)
		dbs := dbDay(dbs0, ringDBCounters(lr, marks))
		stopProfile()
		ws, err = web.stats()
		if err != nil {
			t.Fatal(err)
		}
		cs := ringCrawlStats(lr)
		var errs int64
		for _, n := range cs.ErrorsByKind {
			errs += n
		}
		disk := diskUsage(data...)
		var index, versions int64
		for _, n := range lr.Nodes {
			index += diskUsage(filepath.Join(n.store.Dir(), "index"))
			versions += n.store.Stats().Versions
		}
		peaks := smp.peaks()
		row := scaleRow{
			URLs: urls, Nodes: nodes, Day: d, Live: ws.Live, Fetched: cs.FetchedToday, NewVersions: cs.NewVersions,
			NotModified: cs.NotModified, NotFound: ws.NotFound, Errors: errs,
			WallS: wall.Seconds(), CPUS: cpu.Seconds(),
			CPUPer1000: 1000 * cpu.Seconds() / float64(max(cs.FetchedToday, 1)),
			PagesPerS:  float64(cs.FetchedToday) / wall.Seconds(),
			RSSPeakMB:  float64(peakRSS()) / (1 << 20), HeapPeakMB: float64(peaks.heap) / (1 << 20),
			GCCycles: gc.cycles, GCCPUS: gc.cpuS, AllocKBPer: float64(gc.allocs) / 1024 / float64(max(cs.FetchedToday, 1)),
			Goroutines: peaks.goroutines, OpenFiles: peaks.fds,
			DiskMB: float64(disk) / (1 << 20), DiskAddedMB: float64(disk-disk0) / (1 << 20),
			IndexMB: float64(index) / (1 << 20), IndexBytesPerVersion: float64(index) / float64(max(versions, 1)),
			RolloverS: roll.Seconds(), SwitchMS: ms(cs.DaySwitch), IntakeStallMS: ms(probe.max(time.Time{}, time.Time{})),
			RollStallMS: ms(probe.max(start, rollEnd)), LoopStallMS: ms(cs.LongestQueueWait),
			Queued: queued, Known: cs.KnownURLs, Mine: ringHeld(lr),
			ReplayP50MS: ms(rep.p50), ReplayP99MS: ms(rep.p99), ReplayOK: rep.ok, CDXMS: ms(rep.cdx), CDXRows: rep.cdxRows,
			SearchTailS: tail.search.Seconds(), SweepS: tail.sweep.Seconds(), SearchDropped: searchDropped(lr) - dropped0,
			DBs: dbs,
		}
		if nodes > 1 {
			row.Held = versions
			row.ReplMB = float64(replTraffic(lr)-repl0) / (1 << 20)
			row.ReplRounds, row.InSyncPerPair = rounds, inSync
			row.Versions, row.CopiesMissing, lost, err = ringCopies(ctx, lr)
			if err != nil {
				t.Fatal(err)
			}
		}
		if checks := cs.FetchedToday - cs.NewVersions; checks > 0 && d > 0 {
			row.BytesPerCheck = float64(disk-disk0) / float64(checks)
		}
		disk0 = disk
		rows = append(rows, row)
		t.Logf("scale: day %d: %d live, %d fetched (%d new versions, %d not modified), %.1fs, %.2f cpu-s/1000, rss %.0f MiB, heap %.0f MiB, %d goroutines, %d fds, disk +%.1f MiB (index %.0f bytes a version), rollover %.2fs (switch %.1f ms), intake stall %.0f ms (%.0f ms in the rollover), loop stall %.0f ms, queued %d, known %d, mine %d, replay p50 %.1f ms p99 %.1f ms (%d ok), cdx %.1f ms (%d rows), search tail %.1fs (%d dropped), sweep %.1fs, errors %v",
			d, row.Live, row.Fetched, row.NewVersions, row.NotModified, row.WallS, row.CPUPer1000, row.RSSPeakMB, row.HeapPeakMB,
			row.Goroutines, row.OpenFiles, row.DiskAddedMB, row.IndexBytesPerVersion, row.RolloverS, row.SwitchMS, row.IntakeStallMS, row.RollStallMS, row.LoopStallMS, row.Queued, row.Known, row.Mine,
			row.ReplayP50MS, row.ReplayP99MS, row.ReplayOK, row.CDXMS, row.CDXRows, row.SearchTailS, row.SearchDropped, row.SweepS, cs.ErrorsByKind)
		t.Logf("scale: day %d: databases: %s", d, dbLine(row.DBs))
		t.Logf("scale: day %d: gc %d cycles, %.1f cpu-s (%.3f a 1,000 requests), %.1f KiB allocated a request",
			d, row.GCCycles, row.GCCPUS, 1000*row.GCCPUS/float64(max(row.Fetched, 1)), row.AllocKBPer)
		if nodes > 1 {
			t.Logf("scale: day %d: %d nodes hold %d versions (%d distinct, %d copies missing), replication %.1f MiB, %d rounds to sync, in sync %.0f bytes a pair",
				d, nodes, row.Held, row.Versions, row.CopiesMissing, row.ReplMB, row.ReplRounds, row.InSyncPerPair)
			t.Logf("scale: day %d: push %s", d, ringPushReport(lr))
			t.Logf("scale: day %d: politeness %s", d, ringLeaseReport(lr, leases0))
			leases0 = ringLeases(lr)
		}
		if os.Getenv("HEROD_SCALE_HEAPPROFILE") != "" {
			writeHeapProfile(t, filepath.Join(out, fmt.Sprintf("heap-%s-day%d.pprof", name, d)))
		}
		if err := writeScaleRows(out, name, rows); err != nil {
			t.Fatal(err)
		}
		if err := writeScaleDBRows(out, name, rows); err != nil {
			t.Fatal(err)
		}
		if fetched := cs.FetchedToday; fetched < int64(ws.Live) {
			t.Errorf("day %d: %d requests answered, fewer than the %d live pages", d, fetched, ws.Live)
		}
		if row.CopiesMissing > 0 {
			t.Errorf("day %d: %d copies of the ring's %d versions missing from their holders after replication:%s\nreplication:%s",
				d, row.CopiesMissing, row.Versions, lost, lr.replicationReport())
		}
	}
}

// dayTail is the day's work after the crawl went idle, counted in the
// day: the search indexer's remaining versions and the link sweep.
type dayTail struct{ search, sweep time.Duration }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ringLeaseReport says what the ring's host budgets did since from: the
// leases asked of other nodes, and the slots granted, used and expired.
func ringLeaseReport(lr *LocalRing, from PolitenessStats) string {
	p := ringLeases(lr)
	return fmt.Sprintf("%d leases (%d of other nodes), %d slots granted, %d used, %d expired, %d fallback waits",
		p.Leases-from.Leases, p.LeaseRPCs-from.LeaseRPCs, p.Granted-from.Granted, p.Used-from.Used,
		p.Expired-from.Expired, p.FallbackWaits-from.FallbackWaits)
}

// ringPushReport adds up the nodes' push and hand-off counters since they
// started: what the push copied, what it dropped and repaired, and the
// records stored outside their node's ranges and handed to their owners.
func ringPushReport(lr *LocalRing) string {
	var p replication.PushStats
	var h replication.HandOffStats
	for _, n := range lr.Nodes {
		st := n.ReplicationStats()
		p.Queued += st.Push.Queued
		p.Copies += st.Push.Copies
		p.Dropped += st.Push.Dropped
		p.Repairs += st.Push.Repairs
		p.Failed += st.Push.Failed
		p.Foreign += st.Push.Foreign
		h.Records += st.HandOff.Records
		h.Own += st.HandOff.Own
		h.Failed += st.HandOff.Failed
		h.Found += st.HandOff.Found
		h.Taken += st.HandOff.Taken
		h.Held += st.HandOff.Held
		h.Released += st.HandOff.Released
		h.Expired += st.HandOff.Expired
	}
	var dicts []string // how each store got its zstd dictionary
	var commits, versions int64
	for _, n := range lr.Nodes {
		st := n.store.Stats()
		dicts = append(dicts, cmp.Or(st.Dictionary, "none"))
		commits += st.Commits
		versions += st.Versions
	}
	return fmt.Sprintf("%d queued, %d copies, %d dropped (%d range repairs), %d failed; %d stored outside their node's ranges (%d of them its own by the ring), %d found by sweeps, %d handed off (%d taken by owners; held %d, released %d, expired %d), %d hand-offs failed; dictionaries %v; %d index groups committed for %d versions held",
		p.Queued, p.Copies, p.Dropped, p.Repairs, p.Failed, p.Foreign, h.Own, h.Found, h.Records, h.Taken, h.Held, h.Released, h.Expired, h.Failed, dicts, commits, versions)
}

// ringCrawlStats adds up the nodes' crawl counters (the longest waits
// are the longest of any node).
func ringCrawlStats(lr *LocalRing) crawl.Stats {
	var sum crawl.Stats
	sum.ErrorsByKind = map[string]int64{}
	for _, n := range lr.Nodes {
		cs := n.crawler.Stats()
		sum.Queued += cs.Queued
		sum.FetchedToday += cs.FetchedToday
		sum.NewVersions += cs.NewVersions
		sum.NotModified += cs.NotModified
		sum.KnownURLs += cs.KnownURLs
		sum.DaySwitch = max(sum.DaySwitch, cs.DaySwitch)
		sum.LongestQueueWait = max(sum.LongestQueueWait, cs.LongestQueueWait)
		for k, v := range cs.ErrorsByKind {
			sum.ErrorsByKind[k] += v
		}
	}
	return sum
}

func ringIdle(lr *LocalRing) bool {
	for _, n := range lr.Nodes {
		if !n.Idle() {
			return false
		}
	}
	return true
}

// ringHeld adds up the claims' fetch sets held in memory.
func ringHeld(lr *LocalRing) (sum int) {
	for _, n := range lr.Nodes {
		sum += n.claims.Held()
	}
	return sum
}

// replTraffic is the ring's replication traffic so far: rounds' syncs
// and pull requests, and pushes (offers and the copies' reads).
// searchDropped sums the versions the nodes' search queues dropped.
func searchDropped(lr *LocalRing) int64 {
	var n int64
	for _, nd := range lr.Nodes {
		n += nd.SearchStats().Dropped
	}
	return n
}

func replTraffic(lr *LocalRing) int64 {
	_, push, _, _ := pushTotals(lr)
	return lr.replicationTotals().Syncs.Traffic.Bytes() + push
}

// replicateDay runs replication rounds on every node, after the day's
// crawl, until a round of all of them pulls nothing, and returns the
// rounds run and that in-sync round's bytes per (range, replica) pair.
func replicateDay(ctx context.Context, t *testing.T, lr *LocalRing) (int, float64) {
	t.Helper()
	for rounds := 1; ; rounds++ {
		before := lr.replicationTotals()
		for _, n := range lr.Nodes {
			if err := n.Replicate(ctx); err != nil {
				t.Fatalf("replication round: %v", err)
			}
		}
		lr.waitReplicationIdle(ctx, t)
		after := lr.replicationTotals()
		if after.Syncs.Pulled == before.Syncs.Pulled {
			pairs := after.Pairs - before.Pairs
			return rounds, float64(after.Syncs.Traffic.Bytes()-before.Syncs.Traffic.Bytes()) / float64(max(pairs, 1))
		}
		if rounds == 20 {
			t.Fatalf("replication not in sync after %d rounds:%s", rounds, lr.replicationReport())
		}
	}
}

// ringCopies returns the ring's distinct versions and how many of their
// copies are missing from the ReplicationFactor holders each must be on
// (lr.holders), from every store's entries, with the first few missing
// described (the entry, the nodes that hold it, its holders).
func ringCopies(ctx context.Context, lr *LocalRing) (versions, missing int64, desc string, err error) {
	held := map[archive.Entry][]*Node{}
	for _, n := range lr.Nodes {
		ents, err := n.Store().Entries(ctx, id.ID{}, id.ID{})
		if err != nil {
			return 0, 0, "", err
		}
		for _, e := range ents {
			held[e] = append(held[e], n)
		}
	}
	var b strings.Builder
	addrs := func(ns []*Node) (out []string) {
		for _, n := range ns {
			out = append(out, n.self.Addr)
		}
		return out
	}
	for e, on := range held {
		hs := lr.holders(e.Key, ReplicationFactor)
		lost := false
		for _, h := range hs {
			if !slices.Contains(on, h) {
				missing, lost = missing+1, true
			}
		}
		if lost && b.Len() < 4000 {
			fmt.Fprintf(&b, "\n  %s (day %d) on %v, holders %v%s", e.Name(), e.Day, addrs(on), addrs(hs), ringViews(ctx, lr, e, on[0]))
		}
	}
	return int64(len(held)), missing, b.String(), nil
}

// ringViews describes, for a version whose copies are missing, its URL
// and fetcher (read from node on, which holds it) and how each node sees
// its key: whether it owns the key (Ring.OwnerVnode), and the range,
// predecessor and replicas of its virtual server nearest the key.
func ringViews(ctx context.Context, lr *LocalRing, e archive.Entry, on *Node) string {
	var b strings.Builder
	if data, err := on.store.ReadFile(ctx, e); err == nil {
		if c, _, err := on.store.VerifyRecord(data); err == nil {
			fetcher := c.Peer
			for _, n := range lr.Nodes {
				if n.self.Peer == c.Peer {
					fetcher = n.self.Addr
				}
			}
			fmt.Fprintf(&b, "\n    url %s captured %s by %s", c.URL, c.Time.UTC().Format(time.RFC3339Nano), fetcher)
		}
	}
	for _, n := range lr.Nodes {
		st := n.ring.Status()
		v, owns := n.ring.OwnerVnode(e.Key)
		fmt.Fprintf(&b, "\n    %s owns %v", n.self.Addr, owns)
		if owns {
			fmt.Fprintf(&b, " (vnode %s)", v.ID.Short())
		}
		for _, vs := range st.Vnodes {
			if vs.Range.Known && !id.InHalfOpen(e.Key, vs.Range.Start, vs.Range.End) && vs.Range.Start != vs.Range.End {
				continue
			}
			var reps []string
			for _, s := range vs.Successors {
				reps = append(reps, s.Addr)
			}
			pred := "none"
			if vs.Predecessor != nil {
				pred = vs.Predecessor.ID.Short() + "@" + vs.Predecessor.Addr
			}
			fmt.Fprintf(&b, "; vnode %s range known %v (%s, %s] pred %s successors %v", vs.ID.Short(), vs.Range.Known,
				vs.Range.Start.Short(), vs.Range.End.Short(), pred, reps)
		}
		if len(st.Suspects) > 0 {
			fmt.Fprintf(&b, "; suspects %v", st.Suspects)
		}
	}
	return b.String()
}

// writeScaleRows writes the rows so far as CSV and JSON.
func writeScaleRows(dir, name string, rows []scaleRow) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, "scale-"+name)
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", b, 0o644); err != nil {
		return err
	}
	f, err := os.Create(base + ".csv")
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	var recs []map[string]any
	if err := json.Unmarshal(b, &recs); err != nil {
		return err
	}
	// A ring's rows have its columns too (empty in a zero row).
	proto := scaleRow{}
	if len(rows) > 0 && rows[0].Nodes > 1 {
		proto = scaleRow{Held: 1, ReplMB: 1, ReplRounds: 1, InSyncPerPair: 1, Versions: 1, CopiesMissing: 1}
	}
	var head []string
	for _, tag := range jsonTags(proto) {
		head = append(head, tag)
	}
	w.Write(head)
	for _, r := range recs {
		var line []string
		for _, h := range head {
			v, ok := r[h]
			if !ok {
				v = 0 // omitted from the JSON as empty
			}
			line = append(line, fmt.Sprint(v))
		}
		w.Write(line)
	}
	w.Flush()
	return w.Error()
}

// jsonTags returns the JSON names of v's fields, in order.
func jsonTags(v any) []string {
	b, _ := json.Marshal(v)
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var names []string
	dec.Token() // {
	for dec.More() {
		tok, _ := dec.Token()
		names = append(names, tok.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	return names
}

// scaleWeb is the webgen process.
type scaleWeb struct {
	control string
	roots   []string
	client  *http.Client
}

// startWebgen builds (unless HEROD_SCALE_WEBGEN names one) and starts
// webgen for urls pages and waits for its addresses.
func startWebgen(t *testing.T, dir string, urls int, seed string) *scaleWeb {
	t.Helper()
	bin := os.Getenv("HEROD_SCALE_WEBGEN")
	if bin == "" {
		bin = filepath.Join(dir, "webgen")
		b, err := exec.Command("go", "build", "-o", bin, "../scripts/scale/webgen").CombinedOutput()
		if err != nil {
			t.Fatalf("build webgen: %v\n%s", err, b)
		}
	}
	addrs := filepath.Join(dir, "webgen.addrs")
	cmd := exec.Command(bin, "-urls", strconv.Itoa(urls), "-seed", seed, "-addrs", addrs)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile(addrs)
		if err == nil {
			lines := strings.Fields(string(b))
			return &scaleWeb{control: lines[0], roots: lines[1:], client: &http.Client{Timeout: time.Minute}}
		}
		if time.Now().After(deadline) {
			t.Fatalf("webgen wrote no addresses in a minute: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting on another process's file
	}
}

func (w *scaleWeb) setDay(d int) error {
	resp, err := w.client.Post(w.control+"day?d="+strconv.Itoa(d), "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("webgen day: %s", resp.Status)
	}
	return nil
}

// webStats is webgen's GET /stats.
type webStats struct {
	Live     int   `json:"live"`
	Hosts    int   `json:"hosts"`
	NotFound int64 `json:"notFound"`
}

func (w *scaleWeb) stats() (webStats, error) {
	var s webStats
	resp, err := w.client.Get(w.control + "stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

type replayStats struct {
	p50, p99, cdx time.Duration
	ok, cdxRows   int
}

// replay asks the node's gateway for 200 replays of random day-0 pages
// (the newest capture) and one host's CDX listing.
func (w *scaleWeb) replay(t *testing.T, nd *Node, urls, day int) replayStats {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(day), 40))
	hosts := len(w.roots)
	var lat []time.Duration
	var st replayStats
	for range 200 {
		p := rng.IntN(urls)
		host, local := p%hosts, p/hosts
		page := strings.TrimSuffix(w.roots[host], "/") + fmt.Sprintf("/s%d/page-%d.html", local/100, local)
		start := time.Now()
		resp, err := w.client.Get(nd.ReplayURL() + "web/29991231000000id_/" + page)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			lat = append(lat, time.Since(start))
			st.ok++
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		st.p50, st.p99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	u, _ := url.Parse(w.roots[rng.IntN(hosts)])
	start := time.Now()
	resp, err := w.client.Get(nd.GatewayURL() + "cdx?matchType=host&limit=100000&url=" + url.QueryEscape(u.Host+"/"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		st.cdxRows++
	}
	resp.Body.Close()
	st.cdx = time.Since(start)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("cdx: %s", resp.Status)
	}
	return st
}

// gcCounters are the Go collector's cumulative counters (runtime/metrics).
type gcCounters struct {
	cycles uint64
	cpuS   float64
	allocs uint64
}

func readGCCounters() gcCounters {
	s := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s)
	return gcCounters{s[0].Value.Uint64(), s[1].Value.Float64(), s[2].Value.Uint64()}
}

func (c gcCounters) since(o gcCounters) gcCounters {
	return gcCounters{c.cycles - o.cycles, c.cpuS - o.cpuS, c.allocs - o.allocs}
}

// scaleSampler samples the Go heap and goroutines every 100 ms and the
// open files every second: listing /proc/self/fd costs about 2 ms of CPU
// with the 600-700 descriptors of a 1 M node, which every 100 ms charged
// the node 1.3% more CPU at 1 M than at 10 K. A day's first sample
// after reset lists them too.
type scaleSampler struct {
	mu              sync.Mutex
	heap            uint64
	goroutines, fds int
	fdsDue          bool // the next sample lists the open files
}

type samplePeaks struct {
	heap            uint64
	goroutines, fds int
}

func newScaleSampler() *scaleSampler { return &scaleSampler{} }

func (s *scaleSampler) run(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		s.mu.Lock()
		due := s.fdsDue || n%10 == 0
		s.fdsDue = false
		s.mu.Unlock()
		fds := -1
		if due {
			ents, _ := os.ReadDir("/proc/self/fd")
			fds = len(ents)
		}
		g := runtime.NumGoroutine()
		s.mu.Lock()
		s.heap = max(s.heap, sample[0].Value.Uint64())
		s.goroutines = max(s.goroutines, g)
		s.fds = max(s.fds, fds)
		s.mu.Unlock()
	}
}

func (s *scaleSampler) reset() {
	s.mu.Lock()
	s.heap, s.goroutines, s.fds, s.fdsDue = 0, 0, 0, true
	s.mu.Unlock()
}

func (s *scaleSampler) peaks() samplePeaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return samplePeaks{s.heap, s.goroutines, s.fds}
}

// intakeProbe offers one link every 20 ms, as a fetched page's links
// arrive, and keeps each Add's start and duration over the day. Most are
// a link seen today (the seen test every link takes); every
// probeFreshEvery-th is a URL never seen (a synced write of the queue),
// which the web answers with a 404: about one URL a second more to fetch,
// and again on later days.
type intakeProbe struct {
	nd     *Node
	link   string
	paused atomic.Bool // no Adds while set: the day's crawl is over
	mu     sync.Mutex
	adds   []probeAdd
}

// pause stops (on) or resumes the probe's Adds.
func (p *intakeProbe) pause(on bool) { p.paused.Store(on) }

type probeAdd struct {
	start time.Time
	took  time.Duration
}

func newIntakeProbe(nd *Node, link string) *intakeProbe { return &intakeProbe{nd: nd, link: link} }

// probeFreshEvery is how often the intake probe offers a URL never seen.
const probeFreshEvery = 50

func (p *intakeProbe) run(ctx context.Context) {
	for n := 1; ctx.Err() == nil; n++ {
		if p.paused.Load() {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		link := p.link
		if n%probeFreshEvery == 0 {
			link = strings.TrimSuffix(p.link, "/") + "/scale-probe/" + strconv.Itoa(n)
		}
		start := time.Now()
		p.nd.crawler.Add(ctx, []string{link})
		d := time.Since(start)
		p.mu.Lock()
		p.adds = append(p.adds, probeAdd{start, d})
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *intakeProbe) reset() {
	p.mu.Lock()
	p.adds = nil
	p.mu.Unlock()
}

// max returns the longest Add that overlapped [from, to], or of all when
// from is zero.
func (p *intakeProbe) max(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m time.Duration
	for _, a := range p.adds {
		if from.IsZero() || (a.start.Before(to) && a.start.Add(a.took).After(from)) {
			m = max(m, a.took)
		}
	}
	return m
}

// resetPeakRSS resets the process's VmHWM (Linux clear_refs 5).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns VmHWM in bytes.
func peakRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// diskUsage returns the bytes of disk the files under dirs take.
func diskUsage(dirs ...string) int64 {
	var n int64
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			if fi, err := e.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
			return nil
		})
	}
	return n
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

// startCPUProfile starts a CPU profile of day d when HEROD_SCALE_CPUPROFILE
// (a day, or days separated by commas) names it, and returns the function
// that stops it.
func startCPUProfile(t *testing.T, out, name string, d int) func() {
	if !slices.Contains(strings.Split(os.Getenv("HEROD_SCALE_CPUPROFILE"), ","), strconv.Itoa(d)) {
		return func() {}
	}
	f, err := os.Create(filepath.Join(out, fmt.Sprintf("cpu-%s-day%d.pprof", name, d)))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
