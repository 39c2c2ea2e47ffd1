package node

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// requestsPerURL counts the web's requests per URL, robots.txt aside.
func requestsPerURL(web *sampleweb.Web) map[string]int {
	out := map[string]int{}
	for _, r := range web.Requests() {
		if r.Path == "/robots.txt" {
			continue
		}
		out["http://"+r.Host+r.Path]++
	}
	return out
}

// newDayRequests counts, per URL, the requests the site saw from each
// node (by User-Agent) since its new day began (began; a node not in it
// counts from the start), robots.txt aside, and how many came before.
func newDayRequests(web *sampleweb.Web, began map[string]time.Time) (map[string]int, int) {
	out, before := map[string]int{}, 0
	for _, r := range web.Requests() {
		if r.Path == "/robots.txt" {
			continue
		}
		if b, ok := began[r.UserAgent]; ok && r.Time.Before(b) {
			before++
			continue
		}
		out["http://"+r.Host+r.Path]++
	}
	return out, before
}

// checkOncePerURL fails unless every URL of known was requested exactly
// once and nothing else was.
func checkOncePerURL(t *testing.T, event string, known []string, got map[string]int) {
	t.Helper()
	missing, twice, extra := sampleweb.OncePerURL(known, got)
	checked := len(known) - len(missing)
	t.Logf("%s: %d of %d known URLs requested on the next day (%.3f), %d more than once, %d unknown",
		event, checked, len(known), float64(checked)/float64(len(known)), len(twice), len(extra))
	if len(missing)+len(twice)+len(extra) > 0 {
		t.Errorf("%s: missing %v\ntwice %v\nunknown %v", event, head(missing), head(twice), head(extra))
	}
}

func head(s []string) string {
	if len(s) > 8 {
		return strings.Join(s[:8], " ") + " …"
	}
	return strings.Join(s, " ")
}

// newDayAll starts a new crawl day on every node and waits until the ring
// is idle.
func newDayAll(ctx context.Context, t *testing.T, lr *LocalRing) {
	t.Helper()
	for _, n := range lr.Nodes {
		if err := n.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitReplicated waits until every version is on its k holders.
func waitReplicated(ctx context.Context, t *testing.T, lr *LocalRing) {
	t.Helper()
	for {
		err := lr.checkReplicated(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("not replicated: %v%s", err, lr.replicationReport())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHistoryNeverStops is issue 15's acceptance in process: after a node
// crashes for good, after a node joins, and after a node is down for a day
// and comes back, the next day requests every URL the ring knew exactly
// once at the site (the sample web does not change, so every answer is a
// 304 or an unchanged redirect or 404, and no link travels: only the
// ranges' known URLs are fetched).
func TestHistoryNeverStops(t *testing.T) {
	if testing.Short() {
		t.Skip("five-node ring crawling for four days: skipped in -short mode")
	}
	ctx, cancel := dayContext(t, 4*time.Minute)
	defer cancel()
	// HEROD_HISTORY_TRACE=1: for URLs requested twice or never after the
	// crash, the nodes' debug lines and state (traceURLs).
	var trace *lockedBuffer
	if os.Getenv("HEROD_HISTORY_TRACE") != "" {
		trace = &lockedBuffer{}
		traceTo = trace
		defer func() { traceTo = nil }()
	}
	// The site's log is split at each node's DayStarted: a new day waits
	// for the old day's requests on their way however loaded the machine
	// (crawl.Config.DaySwitchWait; 1 s by default).
	web, lr := startWebAndRing(ctx, t, 4, sampleweb.Config{Hosts: 3, Pages: 60}, func(c *crawl.Config) {
		c.DaySwitchWait = time.Minute
	})
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(200 * time.Millisecond)
	}
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	known := sortedKeys(requestsPerURL(web))
	// The sample web's /private/ pages are refused by its robots.txt: no
	// version carries them, so they travel only as known URLs (forward.Links.ShareKnown);
	// every day each is checked against robots.txt once, by its owner.
	refused := robotsRefused(lr)
	// A day on which nothing changes: every node shares the URLs it owns
	// that no version carries with their ranges' holders.
	newDayAll(ctx, t, lr)
	waitReplicated(ctx, t, lr)
	logErrorVersionBytes(ctx, t, lr, known)
	var shared int64
	for _, n := range lr.Nodes {
		shared += n.Status().Links.KnownShared
	}
	t.Logf("known URLs without versions (refused by robots.txt): %d; %d sent to their holders (%.1f a URL)", refused, shared, float64(shared)/float64(max(refused, 1)))
	if refused == 0 || shared == 0 {
		t.Fatalf("the test needs URLs without versions (robots refusals): %d, shared %d", refused, shared)
	}

	// A node crashes for good. Right away, before the ring has noticed,
	// every survivor's gateway still serves the URLs it owned, from the
	// replicas.
	victim := lr.Nodes[1]
	var owned []string
	for _, u := range known {
		if has, _ := victim.store.HasVersion(u); has && lr.Owner(id.OfString(u)) == victim {
			owned = append(owned, u) // archived: the gateway serves it
		}
	}
	if len(owned) == 0 {
		t.Fatal("the victim owns none of the URLs")
	}
	victim.crash()
	lr.Nodes = slices.Delete(lr.Nodes, 1, 2)
	// The new day starts before the survivors have noticed: the successor
	// takes the range over when it does, in the middle of the day.
	web.ResetRequests()
	var wg sync.WaitGroup
	var mu sync.Mutex
	began := map[string]time.Time{} // by User-Agent: when the node's new day began
	for _, n := range lr.Nodes {    // at once, as the nodes' clocks start a day
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.NewDay(ctx); err != nil {
				t.Error(err)
			}
			mu.Lock()
			began[n.cfg.Crawl.UserAgent] = n.crawler.Stats().DayStarted
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, n := range lr.Nodes {
		for _, u := range owned[:min(len(owned), 10)] {
			if v, c, err := (*resolver)(n).Get(ctx, u, time.Now()); err != nil || c == nil || v.URL != u {
				t.Fatalf("%s: gateway of %s with the owner down: %+v, %v", u, n.self.Addr, v, err)
			}
			if vs, err := (*resolver)(n).Versions(ctx, u); err != nil || len(vs) == 0 {
				t.Fatalf("%s: versions at %s with the owner down: %d, %v", u, n.self.Addr, len(vs), err)
			}
		}
	}
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// A survivor that noticed the crash before its new day began (its
	// crawler's DayStarted) took the range over on the old day: those
	// fetches are the old day's, and the new day fetches the range again.
	crashDay, oldDay := newDayRequests(web, began)
	if trace != nil {
		for ua, b := range began {
			t.Logf("%s: new day from %s", ua, b.Format("05.000"))
		}
	}
	t.Logf("crash: %d requests on the old day (a take-over before that node's new day)", oldDay)
	checkOncePerURL(t, "crash", known, crashDay)
	traceURLs(t, trace, lr, web, known, crashDay)
	checkRobotsRefused(t, "crash", lr, refused)
	var takenOver int64
	for _, n := range lr.Nodes {
		takenOver += n.Status().TakenOver
	}
	t.Logf("crash: %d URLs queued by mid-day take-overs", takenOver)

	// A node joins: it takes ranges over from their owners. Until it has
	// pulled them (replication is held back here), every gateway serves
	// the URLs it now owns from their replicas.
	waitReplicated(ctx, t, lr)
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(-1)
	}
	cfg := lr.Nodes[0].cfg
	cfg.ReplicationInterval = -1
	cfg.DataDir = t.TempDir()
	cfg.Listen, cfg.Gateway = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Join = []string{lr.Nodes[0].Multiaddr()}
	cfg.Crawl.UserAgent = "herod-joiner"
	joiner, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := joiner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { joiner.Close() })
	lr.Nodes = append(lr.Nodes, joiner)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	var taken int
	for _, u := range known {
		if has, _ := lr.Owner(id.OfString(u)).store.HasVersion(u); lr.Owner(id.OfString(u)) != joiner || has {
			if lr.Owner(id.OfString(u)) != joiner {
				continue
			}
		}
		if !archivedSomewhere(lr, u) {
			continue // a refused image: nothing to serve
		}
		taken++
		for _, n := range lr.Nodes {
			if _, c, err := (*resolver)(n).Get(ctx, u, time.Now()); err != nil || c == nil {
				t.Fatalf("%s: gateway of %s before the joiner synced: %v", u, n.self.Addr, err)
			}
		}
	}
	if taken == 0 {
		t.Fatal("the joiner owns none of the URLs")
	}
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(200 * time.Millisecond)
	}
	waitReplicated(ctx, t, lr)
	// The joiner's crawl day is the clock's, behind the ring's compressed
	// days: a former owner answers its claims "another day: nothing
	// recorded", so its take-over fetches its range again on that day.
	// Those fetches are the old day's; the new day starts once they are
	// done, and any still on their way count for the old day.
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	var tookOver int
	for _, r := range web.Requests() {
		if r.UserAgent == joiner.cfg.Crawl.UserAgent && r.Path != "/robots.txt" {
			tookOver++
		}
	}
	t.Logf("join: the joiner (day %d, the ring's %d) fetched %d URLs on its day of the join", joiner.crawler.CurrentDay(), lr.Nodes[0].crawler.CurrentDay(), tookOver)
	web.ResetRequests()
	newDayAll(ctx, t, lr)
	began = map[string]time.Time{}
	for _, n := range lr.Nodes {
		began[n.cfg.Crawl.UserAgent] = n.crawler.Stats().DayStarted
	}
	joinDay, oldDay := newDayRequests(web, began)
	t.Logf("join: %d requests on the old day (the joiner's take-over)", oldDay)
	checkOncePerURL(t, "join", known, joinDay)
	logRepeated(t, lr, web, known, joinDay)
	traceURLs(t, trace, lr, web, known, joinDay)
	checkRobotsRefused(t, "join", lr, refused)
	if joiner.crawler.Stats().FetchedToday == 0 {
		t.Error("the joiner fetched nothing of its range")
	}

	// A node is down for a whole day, then comes back on its data.
	away := lr.Nodes[0]
	awayCfg := away.cfg
	if err := away.Close(); err != nil {
		t.Fatal(err)
	}
	lr.Nodes = lr.Nodes[1:]
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	web.ResetRequests()
	newDayAll(ctx, t, lr)
	got := requestsPerURL(web)
	checkOncePerURL(t, "down for a day", known, got)
	logRepeated(t, lr, web, known, got)
	checkRobotsRefused(t, "down for a day", lr, refused)

	awayCfg.Join = []string{lr.Nodes[0].Multiaddr()}
	back, err := New(awayCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	back.SetReplicationInterval(200 * time.Millisecond)
	lr.Nodes = append(lr.Nodes, back)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	waitReplicated(ctx, t, lr)
	web.ResetRequests()
	newDayAll(ctx, t, lr)
	got = requestsPerURL(web)
	checkOncePerURL(t, "back after a day", known, got)
	logRepeated(t, lr, web, known, got)
	checkRobotsRefused(t, "back after a day", lr, refused)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// logErrorVersionBytes logs what storing error answers costs: the URLs
// whose only record is an error answer (the known set that travels with a
// range through the archive, instead of a replicated crawl state) and the
// bytes of their version files.
func logErrorVersionBytes(ctx context.Context, t *testing.T, lr *LocalRing, known []string) {
	t.Helper()
	var n, bytes int64
	for _, u := range known {
		owner := lr.Owner(id.OfString(u))
		vs, err := owner.store.Versions(ctx, u)
		if err != nil || len(vs) == 0 || vs[len(vs)-1].Status < 400 {
			continue
		}
		n++
		bytes += vs[len(vs)-1].Size
	}
	if n > 0 {
		t.Logf("error answers: %d of %d URLs, %d bytes a version file (%d bytes of crawl state replicated per URL: states are derived from versions)",
			n, len(known), bytes/n, 0)
	}
}

// archivedSomewhere reports whether any node of lr holds a version of u.
func archivedSomewhere(lr *LocalRing, u string) bool {
	for _, n := range lr.Nodes {
		if has, _ := n.store.HasVersion(u); has {
			return true
		}
	}
	return false
}

// robotsRefused is how many URLs the ring's crawlers refused today because
// robots.txt disallows them.
func robotsRefused(lr *LocalRing) int64 {
	var n int64
	for _, nd := range lr.Nodes {
		n += nd.crawler.Stats().ErrorsByKind[crawl.KindRobots]
	}
	return n
}

// checkRobotsRefused fails unless today every URL refused by robots.txt on
// day 0 was checked again, once: its new owner knew it.
func checkRobotsRefused(t *testing.T, event string, lr *LocalRing, want int64) {
	t.Helper()
	if got := robotsRefused(lr); got != want {
		t.Errorf("%s: %d URLs checked against robots.txt and refused, want the %d known", event, got, want)
	}
}

// traceURLs logs, with a trace, for the first URLs of known not
// requested exactly once: the URL's key, its requests (when, by whom),
// who stored versions of it (fetcher and time), each node's virtual
// servers with their predecessors, and the trace's lines that name the
// URL, take-overs and new days.
func traceURLs(t *testing.T, trace *lockedBuffer, lr *LocalRing, web *sampleweb.Web, known []string, got map[string]int) {
	if trace == nil {
		return
	}
	var bad []string
	for _, u := range known {
		if got[u] != 1 && len(bad) < 6 {
			bad = append(bad, u)
		}
	}
	if len(bad) == 0 {
		return
	}
	ctx := context.Background()
	for _, n := range lr.Nodes {
		var vs []string
		for _, v := range n.ring.Status().Vnodes {
			pred := "?"
			if v.Predecessor != nil {
				pred = v.Predecessor.ID.Short() + "@" + v.Predecessor.Addr
			}
			vs = append(vs, v.ID.Short()+"<-"+pred)
		}
		t.Logf("node %s (%s): %v", n.self.Addr, n.self.Peer[len(n.self.Peer)-6:], vs)
	}
	for _, u := range bad {
		t.Logf("trace of %s, requested %d times (key %s):", u, got[u], id.OfString(u).Short())
		for _, r := range web.Requests() {
			if "http://"+r.Host+r.Path == u {
				t.Logf("   requested at %s by %s", r.Time.Format("05.000"), r.UserAgent)
			}
		}
		for _, n := range lr.Nodes {
			vs, _ := n.store.Versions(ctx, u)
			for _, v := range vs {
				t.Logf("   stored at %s: %s by %s", n.self.Addr, v.Time.Format("05.000"), v.Peer[max(0, len(v.Peer)-6):])
			}
		}
	}
	for _, l := range trace.lines() {
		if strings.Contains(l, "took over a range") || strings.Contains(l, "crawl: new day") || slices.ContainsFunc(bad, func(u string) bool { return strings.Contains(l, u) }) {
			t.Log("  ", l)
		}
	}
}

// logRepeated logs, for the first URLs requested more than once, each
// request's time and User-Agent, with the nodes' day starts: which node
// fetched a URL again, and on which day.
func logRepeated(t *testing.T, lr *LocalRing, web *sampleweb.Web, known []string, got map[string]int) {
	var bad []string
	for _, u := range known {
		if got[u] > 1 && len(bad) < 4 {
			bad = append(bad, u)
		}
	}
	if len(bad) == 0 {
		return
	}
	for _, n := range lr.Nodes {
		st := n.crawler.Stats()
		t.Logf("node %s (%s, %s): day %d started %s, %d fetched today", n.self.Addr, n.cfg.Crawl.UserAgent, n.self.Peer[len(n.self.Peer)-6:], n.crawler.CurrentDay(), st.DayStarted.Format("05.000"), st.FetchedToday)
	}
	for _, u := range bad {
		owner := lr.Owner(id.OfString(u))
		t.Logf("%s (owner %s):", u, owner.self.Addr)
		for _, r := range web.Requests() {
			if "http://"+r.Host+r.Path == u {
				t.Logf("   requested at %s by %s", r.Time.Format("05.000"), r.UserAgent)
			}
		}
	}
}
