package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node"
	"github.com/herod-archive/herod/ring"
)

// getInto decodes the JSON at path of p's gateway into v.
func getInto(p *proc, path string, v any) error {
	resp, err := http.Get("http://" + p.gateway + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// live returns the running processes.
func (r *procRing) live() []*proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.procs)
}

// waitReplicated waits until the running nodes are idle (nothing queued,
// fetching or forwarding) and then for a replication round on every node
// that began after that and found all its ranges with k copies. A round
// that ends after a time may have begun before it, while pages were still
// being fetched: so it waits for rounds since the idle time, then for
// rounds since the first of those ended.
func (r *procRing) waitReplicated(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	testwait.For(t, "every node idle before "+what, timeout, func() bool { return ringIdle(r.live()) })
	since := time.Now()
	testwait.For(t, what, timeout, func() bool { return r.replicatedSince(since) })
	since = time.Now()
	testwait.For(t, what+" (a round begun after the idle time)", timeout, func() bool { return r.replicatedSince(since) })
}

// replicatedSince reports whether every running node has run a
// replication round that ended after t and found all its ranges with k
// copies.
func (r *procRing) replicatedSince(t time.Time) bool {
	for _, p := range r.live() {
		var st node.Status
		if err := getInto(p, "/api/status", &st); err != nil {
			return false
		}
		h := st.Replication.Health
		if h.LastRound.Before(t) || h.Ranges == 0 || h.Behind > 0 || h.BelowK > 0 {
			return false
		}
	}
	return true
}

// logReplication logs, for each node, its versions, its replication
// health, push and hand-off counters, and its virtual servers' ranges.
func logReplication(t *testing.T, nodes []*proc) {
	t.Helper()
	for _, p := range nodes {
		var st struct {
			Archive struct {
				Versions int64 `json:"versions"`
			} `json:"archive"`
			Replication struct {
				Health json.RawMessage `json:"health"`
				Push   struct {
					Queued, Dropped, Foreign, Short, Failed, Repairs int64
				} `json:"push"`
				HandOff struct {
					Records, Failed, Held int64
				} `json:"hand_off"`
				Rounds    int64  `json:"rounds"`
				LastError string `json:"last_error"`
			} `json:"replication"`
			Ring ring.Status `json:"ring"`
		}
		if err := getInto(p, "/api/status", &st); err != nil {
			t.Logf("%s: status: %v", p.listen, err)
			continue
		}
		var ranges []string
		for _, v := range st.Ring.Vnodes {
			ranges = append(ranges, fmt.Sprintf("(%s, %s] known %v, %d successors", v.Range.Start.Short(), v.Range.End.Short(), v.Range.Known, len(v.Successors)))
		}
		var health bytes.Buffer
		_ = json.Compact(&health, st.Replication.Health)
		rp := st.Replication
		t.Logf("%s: %d versions, %d rounds, health %s, push %+v, hand-off %+v, last error %q; ranges %v",
			p.listen, st.Archive.Versions, rp.Rounds, health.String(), rp.Push, rp.HandOff, rp.LastError, ranges)
	}
}

// upPeers returns the peers p's ring page shows up.
func upPeers(p *proc) []string {
	var rv ringview.View
	if err := getInto(p, "/ring?format=json", &rv); err != nil {
		return nil
	}
	var up []string
	for _, s := range rv.Peers {
		if s.State == "up" {
			up = append(up, s.Addr)
		}
	}
	slices.Sort(up)
	return up
}

func listens(ps []*proc) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.listen)
	}
	slices.Sort(out)
	return out
}

// TestProcessesDaemonShort runs three herod processes configured by a
// --config file and HEROD_* variables; they crawl a small sample web and
// replicate it to k=2 copies; one is killed -9 and restarted, one leaves
// with SIGTERM, and the ring page and herod status follow each event. It
// takes about 40 s, 17 of them building herod (skipped with -short).
func TestProcessesDaemonShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs herod processes for half a minute")
	}
	ctx := context.Background()
	web := sampleweb.New(sampleweb.Config{Hosts: 2, Pages: 20})
	if err := web.Start(ctx); err != nil {
		t.Skipf("sample web cannot listen on 127.0.0.2-3: %v", err)
	}
	defer web.Close()
	began := time.Now()
	r := newProcRing(t, time.Hour)
	t.Logf("built herod in %s", time.Since(began).Round(100*time.Millisecond))
	conf := filepath.Join(r.dir, "herod.toml")
	os.WriteFile(conf, []byte("replicas = 2\nlog-format = \"json\"\nupload-rate = \"50M\"\n"), 0o644)
	r.extra = []string{"--config", conf}
	r.env = []string{"HEROD_VNODES=2"}

	first := r.start(nil, "")
	second := r.start(nil, first.multiaddr)
	third := r.start(nil, first.multiaddr)
	time.Sleep(2 * time.Second)
	seed := exec.Command(r.bin, append([]string{"seed", "--node", "http://" + first.gateway + "/", "--data", first.data}, web.Seeds()...)...)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("herod seed: %v\n%s", err, out)
	}
	want := len(web.Reachable(0))
	testwait.For(t, "the crawl", time.Minute, func() bool { return r.versions() >= int64(want) })
	r.waitReplicated(t, "k=2 copies of every version", time.Minute)
	t.Logf("crawled %d URLs, replicated: %s", want, time.Since(began).Round(100*time.Millisecond))
	if v := r.versions(); v < 2*int64(want) {
		t.Errorf("%d versions on the nodes, want at least 2 × %d", v, want)
		logReplication(t, r.live())
		// Whether the copies came later, or never: a round saw every
		// range in sync while they were missing.
		late := testwait.Until(30*time.Second, func() bool { return r.versions() >= 2*int64(want) }) == nil
		t.Logf("%d versions after 30 s more (reached %d: %v)", r.versions(), 2*want, late)
		logReplication(t, r.live())
	}

	// The settings took: two virtual servers each (env), JSON logs (file).
	var st node.Status
	if err := getInto(first, "/api/status", &st); err != nil || len(st.Ring.Vnodes) != 2 {
		t.Errorf("first node runs %d virtual servers (%v), want 2 from HEROD_VNODES", len(st.Ring.Vnodes), err)
	}
	logb, _ := os.ReadFile(filepath.Join(r.dir, "node1.log"))
	if line, _, _ := strings.Cut(string(logb), "\n"); !strings.HasPrefix(line, "{") {
		t.Errorf("log line %q is not JSON (log-format from the config file)", line)
	}
	if got, all := upPeers(first), listens(r.live()); !slices.Equal(got, all) {
		t.Errorf("ring page shows %v up, want %v", got, all)
	}

	// kill -9 and restart: the ring page shows it up again.
	r.remove(second, syscall.SIGKILL)
	r.start(second, first.multiaddr)
	testwait.For(t, "the restarted node on the ring page", time.Minute, func() bool {
		return slices.Equal(upPeers(first), listens(r.live()))
	})
	t.Logf("restarted after kill -9, back on the ring page: %s", time.Since(began).Round(100*time.Millisecond))
	// SIGTERM: the node leaves; the others' ring pages stop showing it up.
	r.remove(third, syscall.SIGTERM)
	testwait.For(t, "the ring page without the node that left", time.Minute, func() bool {
		return slices.Equal(upPeers(first), listens(r.live())) && slices.Equal(upPeers(second), listens(r.live()))
	})
	t.Logf("left, gone from the ring pages: %s", time.Since(began).Round(100*time.Millisecond))
	// herod status: two rows up (the headline says "nodes up ·" too), and
	// the node that left listed as departed once the ring has dropped it.
	var out []byte
	var err error
	testwait.For(t, "herod status listing the node that left as departed", 30*time.Second, func() bool {
		out, err = exec.Command(r.bin, "status", "--node", "http://"+first.gateway+"/", "--data", first.data).CombinedOutput()
		return err == nil && strings.Contains(string(out), third.listen+"  departed since ")
	})
	if !strings.Contains(string(out), "(this node)") || strings.Count(string(out), "  up  ") != 2 {
		t.Errorf("herod status: %v\n%s", err, out)
	}
	t.Logf("herod status lists it departed: %s", time.Since(began).Round(100*time.Millisecond))
}

// TestProcessesDaemon is issue 21's acceptance with the built binary: five
// herod processes with one-minute crawl days crawl a sample web that
// changes on day 1; on day 1, once its crawl is done, one is killed -9 and
// restarted, one leaves with SIGTERM (30 s into the day) and a new one
// joins (42 s). Afterwards every
// version is held by k=3 of the running nodes, every gateway serves every
// page at both dates (the day-0 version at a day-0 time, the newest at
// now), and the site saw each URL fetched once on day 0, on day 1 and on
// day 2 (the first whole day after the events); the counts are logged
// either way. Run with HEROD_PROCESS_TESTS=1 (about five minutes;
// HEROD_PROCESS_LOGS=DIR keeps the nodes' verbose logs).
func TestProcessesDaemon(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skipf("runs herod processes for minutes: set %s=1", processTestsEnv)
	}
	const dayLen, k = time.Minute, 3
	ctx := context.Background()
	web := sampleweb.New(sampleweb.Config{Hosts: 3, Pages: 120})
	if err := web.Start(ctx); err != nil {
		t.Skipf("sample web cannot listen on 127.0.0.2-4: %v", err)
	}
	defer web.Close()
	r := newProcRing(t, dayLen)

	// Day 0: five nodes crawl.
	time.Sleep(time.Until(time.Unix((dayOf(time.Now(), dayLen)+1)*int64(dayLen/time.Second), 0)))
	d0 := dayOf(time.Now(), dayLen)
	first := r.start(nil, "")
	nodes := []*proc{first}
	for range 4 {
		nodes = append(nodes, r.start(nil, first.multiaddr))
	}
	time.Sleep(2 * time.Second)
	seed := exec.Command(r.bin, append([]string{"seed", "--node", "http://" + first.gateway + "/", "--data", first.data}, web.Seeds()...)...)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("herod seed: %v\n%s", err, out)
	}
	settle := func(what string, day int64) {
		var n int
		changed := time.Now()
		testwait.For(t, what, dayLen, func() bool { // no new URL for 3 s
			if m := len(perURLOnDay(web, day, dayLen)); m == 0 || m != n {
				n, changed = m, time.Now()
			}
			return time.Since(changed) > 3*time.Second
		})
	}
	settle("the day-0 crawl", d0)
	known := map[string]bool{}
	for u := range perURLOnDay(web, d0, dayLen) {
		known[u] = true
	}
	t.Logf("day 0: %d URLs", len(known))

	// Day 1: the web changes; once the crawl is done, the events.
	time.Sleep(time.Until(time.Unix((d0+1)*int64(dayLen/time.Second), 0).Add(-3 * time.Second)))
	web.SetDay(1)
	startOfDay(dayLen)
	d1 := d0 + 1
	settle("the day-1 crawl", d1)
	// The events, apart in time, so that a second fetch of a URL on day 1
	// can be told apart by when it came (logged below).
	dayStart := time.Unix(d1*int64(dayLen/time.Second), 0)
	at := func(sec int) { time.Sleep(time.Until(dayStart.Add(time.Duration(sec) * time.Second))) }
	type dayEvent struct {
		name string
		at   time.Time
	}
	var events []dayEvent
	event := func(name string) { events = append(events, dayEvent{name, time.Now()}) }
	event("kill -9 and restart")
	r.remove(nodes[1], syscall.SIGKILL)
	time.Sleep(3 * time.Second)
	r.start(nodes[1], first.multiaddr)
	at(30)
	event("SIGTERM leave")
	r.remove(nodes[2], syscall.SIGTERM)
	at(42)
	event("join")
	r.start(nil, first.multiaddr)
	for _, e := range events {
		t.Logf("day 1: %s at %s into the day", e.name, e.at.Sub(dayStart).Round(time.Second))
	}
	if time.Since(dayStart) > dayLen {
		t.Fatalf("the events ran past day %d", d1)
	}
	d2 := waitWholeDayAfter(time.Now(), dayLen)
	if d2 != d1+1 {
		t.Fatalf("the events ended on day %d, after day %d", d2-1, d1)
	}

	// Once per URL per day.
	day0 := perURLOnDay(web, d0, dayLen)
	checkOnce(t, "day 0", sortedKeys(day0), day0)
	day1 := perURLOnDay(web, d1, dayLen)
	for u := range day1 {
		known[u] = true
	}
	var want1 []string
	for u := range known {
		want1 = append(want1, u)
	}
	slices.Sort(want1)
	checkOnce(t, "day 1 (the events)", want1, day1)
	// Which event each second fetch on day 1 followed.
	seen, after := map[string]int{}, map[string]int{}
	for _, rq := range web.Requests() {
		u := "http://" + rq.Host + rq.Path
		if rq.Path == "/robots.txt" || dayOf(rq.Time, dayLen) != d1 {
			continue
		}
		if seen[u]++; seen[u] < 2 {
			continue
		}
		name := "before the events"
		for _, e := range events {
			if !rq.Time.Before(e.at) {
				name = e.name
			}
		}
		after[name]++
	}
	t.Logf("day 1: fetches beyond the first of a URL, by the event they followed: %v", after)
	checkOnce(t, "day 2 (the first whole day after)", want1, perURLOnDay(web, d2, dayLen))

	// k copies: every running node, once idle, has run a round that found
	// its ranges in sync with k-1 replicas.
	r.waitReplicated(t, "k copies of every version", 2*time.Minute)

	// Every gateway serves every page at both dates.
	newOn1 := map[string]bool{}
	for _, u := range web.NewVersions(1) {
		newOn1[u] = true
	}
	ts0 := time.Unix((d1)*int64(dayLen/time.Second), 0).Add(-time.Second).UTC().Format("20060102150405")
	tsNow := time.Now().UTC().Format("20060102150405")
	var checks, bad int
	var mu sync.Mutex
	for _, p := range r.live() {
		var st node.Status
		if err := getInto(p, "/api/status", &st); err != nil {
			t.Fatal(err)
		}
		replay := strings.TrimSuffix(st.Replay, "/")
		type job struct {
			url, ts string
			day     int64
		}
		var jobs []job
		for _, u := range web.Reachable(0) {
			jobs = append(jobs, job{u, ts0, d0})
		}
		for _, u := range web.Reachable(1) {
			d := d0
			if newOn1[u] {
				d = d1
			}
			jobs = append(jobs, job{u, tsNow, d})
		}
		ch := make(chan job)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range ch {
					err := servedOn(replay+"/web/"+j.ts+"id_/"+j.url, j.day, dayLen)
					mu.Lock()
					checks++
					if err != nil {
						bad++
						if bad <= 10 {
							t.Errorf("gateway %s: %s at %s: %v", p.gateway, j.url, j.ts, err)
						}
					}
					mu.Unlock()
				}
			}()
		}
		for _, j := range jobs {
			ch <- j
		}
		close(ch)
		wg.Wait()
	}
	t.Logf("gateways: %d of %d replays served the version of the expected day", checks-bad, checks)

	// Count the copies in the stopped nodes' archives.
	live := r.live()
	for _, p := range live {
		r.remove(p, syscall.SIGTERM)
	}
	holders := map[string]int{}
	for _, p := range live {
		s, err := archive.Open(filepath.Join(p.data, "archive"), archive.Options{DayLength: dayLen})
		if err != nil {
			t.Fatalf("open %s: %v", p.data, err)
		}
		for u := range known {
			vs, err := s.Versions(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				holders[fmt.Sprintf("%s %d %s", u, v.Time.UnixNano(), v.Digest)]++
			}
		}
		s.Close()
	}
	var under []string
	for v, n := range holders {
		if n < k {
			under = append(under, fmt.Sprintf("%s (%d)", v, n))
		}
	}
	slices.Sort(under)
	t.Logf("copies: %d versions, %d with fewer than %d copies on the %d running nodes", len(holders), len(under), k, len(live))
	if len(under) > 0 {
		t.Errorf("versions below k copies: %v", firstFew(under))
	}
}

// servedOn checks that the replay at u answers with a capture made on day
// day.
func servedOn(u string, day int64, dayLen time.Duration) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	md := resp.Header.Get("Memento-Datetime")
	if md == "" {
		return fmt.Errorf("%s without Memento-Datetime", resp.Status)
	}
	at, err := http.ParseTime(md)
	if err != nil {
		return err
	}
	if got := dayOf(at, dayLen); got != day {
		return fmt.Errorf("capture of %s (day %d), want day %d", md, got, day)
	}
	return nil
}

// TestProcessesShares is issue 17's real-process check of fair shares:
// five herod processes with the default virtual servers, rebalancing every
// few seconds, end with every node's part of the ring within [0.7, 1.3]
// of the mean. It runs with HEROD_PROCESS_TESTS=1.
func TestProcessesShares(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skipf("five herod processes rebalancing for a minute: set %s=1", processTestsEnv)
	}
	r := newProcRing(t, time.Hour)
	r.extra = []string{"--rebalance-interval", "2s"}
	first := r.start(nil, "")
	for range 4 {
		r.start(nil, first.multiaddr)
	}
	shares := func() (lo, hi float64, ok bool) {
		lo, hi = 10, 0
		for _, p := range r.live() {
			var st node.Status
			if err := getInto(p, "/api/status", &st); err != nil {
				return 0, 0, false
			}
			var part float64
			for _, v := range st.Ring.Vnodes {
				if !v.Range.Known {
					return 0, 0, false
				}
				part += ring.Frac(v.Range.Start, v.Range.End)
			}
			part *= float64(len(r.live()))
			lo, hi = min(lo, part), max(hi, part)
		}
		return lo, hi, true
	}
	var lo0, hi0 float64
	testwait.For(t, "every range known", time.Minute, func() bool {
		var ok bool
		lo0, hi0, ok = shares()
		return ok
	})
	var lo, hi float64
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if l, h, ok := shares(); ok {
			lo, hi = l, h
			if lo >= 0.7 && hi <= 1.3 {
				break
			}
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("5 processes: max/min part of the ring over the mean %.2f/%.2f after the joins, %.2f/%.2f after rebalancing", hi0, lo0, hi, lo)
	if lo < 0.7 || hi > 1.3 {
		t.Errorf("shares after rebalancing: max %.2f, min %.2f of the mean", hi, lo)
	}
}
