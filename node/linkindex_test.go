package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/graph/network"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/node/rank"
)

// linkWeb is a sample web of two crawl days with known links and
// anchors: on day 2 a drops its link to c and gains one to e, c gains a
// link to a, b does not change.
var linkWeb = []struct {
	day       int
	url, body string
}{
	{1, "http://a.test/", `<a href="/b">Bee   page</a> <a href="http://c.test/">See <b>C</b></a> <a href="/d"><img src=x.png alt="Dee logo"></a>`},
	{1, "http://b.test/", `<a href="http://a.test/">Home</a><a href="http://c.test/">C again</a><img src="http://c.test/pic.png">`},
	{1, "http://c.test/", `<p>no links</p>`},
	{2, "http://a.test/", `<a href="http://a.test/b">Bee page</a><a href="http://a.test/d"><img alt="Dee logo"></a><a href="http://e.test/">Eee</a>`},
	{2, "http://c.test/", `<map><area href="http://a.test/" alt="back home"></map>`},
}

var linkWebWant = map[int]map[string][]string{
	1: {
		"http://a.test/":  {"http://b.test/|Home"},
		"http://a.test/b": {"http://a.test/|Bee page"},
		"http://c.test/":  {"http://a.test/|See C", "http://b.test/|C again"},
		"http://a.test/d": {"http://a.test/|Dee logo"},
		"http://e.test/":  {},
	},
	2: {
		"http://a.test/":  {"http://b.test/|Home", "http://c.test/|back home"},
		"http://a.test/b": {"http://a.test/|Bee page"},
		"http://c.test/":  {"http://b.test/|C again"},
		"http://a.test/d": {"http://a.test/|Dee logo"},
		"http://e.test/":  {"http://a.test/|Eee"},
	},
}

// linkWebDay2 is the capture time of the sample's day 2: recent, so that
// every gateway believes the captures' dates (the witness rule) and
// lists the links their captures carry.
var linkWebDay2 = time.Now().Add(-time.Minute).Truncate(time.Second).UTC()

// linkWebTime is the capture time of the sample's day d (1 or 2): day 1
// is a day before day 2, on the calendar day before it.
func linkWebTime(d int) time.Time { return linkWebDay2.Add(time.Duration(d-2) * 24 * time.Hour) }

// startLinkRing starts 3 stable real libp2p nodes with replication and
// the periodic link sweep off, closed when the test ends.
func startLinkRing(ctx context.Context, t *testing.T) *LocalRing {
	t.Helper()
	return startLinkRingOf(ctx, t, 3, 2)
}

// startLinkRingOf is startLinkRing with nodes nodes of vservers virtual
// servers each (0: the default).
func startLinkRingOf(ctx context.Context, t *testing.T, nodes, vservers int) *LocalRing {
	t.Helper()
	lr, err := StartLocalRing(ctx, t.TempDir(), nodes, Config{VirtualServers: vservers, StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: -1, LinkSweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	return lr
}

// TestLinkIndexRing: on real libp2p nodes, each node indexes the pages
// it owns, the records reach the targets' holders, and any gateway
// answers "links to X" exactly for each of two days; then a PageRank run
// over the ring ranks day 2's graph as gonum does.
func TestLinkIndexRing(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr := startLinkRing(ctx, t)
	for _, d := range []int{1, 2} {
		for _, p := range linkWeb {
			if p.day != d {
				continue
			}
			c := archive.Capture{URL: p.url, Time: linkWebTime(d), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(p.body)}
			if _, _, err := lr.Owner(id.OfString(p.url)).store.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range lr.Nodes {
			if _, err := n.SweepLinks(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, n := range lr.Nodes {
		for _, d := range []int{1, 2} {
			at := gateway.FormatTimestamp(linkWebTime(d))[:8] // the whole day
			for target, want := range linkWebWant[d] {
				var res gateway.LinksAnswer
				getJSON(t, fmt.Sprintf("%slinks?url=%s&at=%s&output=json", n.GatewayURL(), target, at), &res)
				got := []string{}
				for _, l := range res.Links {
					got = append(got, l.Source+"|"+l.Anchor)
				}
				if !slices.Equal(got, want) {
					t.Errorf("node %d, day %d: links to %s = %q, want %q", i, d, target, got, want)
				}
			}
		}
	}

	// The calendar of c lists, as of its newest capture (day 2), b with
	// its anchor and not a, whose link ended that day.
	resp, err := http.Get(lr.Owner(id.OfString("http://c.test/")).GatewayURL() + "web/*/http://c.test/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Pages linking here") || !strings.Contains(string(page), "“C again”") ||
		strings.Contains(string(page), "See C") {
		t.Errorf("calendar of c.test: links panel wrong:\n%s", page)
	}

	// PageRank of day 2's graph (the newest version of each page that day).
	day := lr.Nodes[0].store.DayOf(linkWebTime(2))
	sum, err := lr.Nodes[1].RunRank(ctx, day, rank.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := map[string][]string{
		"http://a.test/": {"http://a.test/b", "http://a.test/d", "http://e.test/"},
		"http://b.test/": {"http://a.test/", "http://c.test/"},
		"http://c.test/": {"http://a.test/"},
	}
	want := gonumOf(g)
	var l1 float64
	for u, w := range want {
		var rk gateway.RankAnswer
		getJSON(t, fmt.Sprintf("%sapi/rank?url=%s", lr.Nodes[2].GatewayURL(), u), &rk)
		l1 += math.Abs(rk.Rank - w)
	}
	t.Logf("ring PageRank: %+v; L1 vs gonum %.2e", sum, l1)
	// The CDX's rank field: day 2's capture of a carries the run's rank,
	// day 1's none (no run ranked that day or before).
	resp, err = http.Get(lr.Owner(id.OfString("http://a.test/")).GatewayURL() + "cdx?url=http://a.test/&fl=timestamp,rank")
	if err != nil {
		t.Fatal(err)
	}
	cdxBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(cdxBody)), "\n")
	if len(lines) != 2 || lines[0] != gateway.FormatTimestamp(linkWebTime(1))+" -" {
		t.Fatalf("cdx of a.test with rank:\n%s", cdxBody)
	}
	f := strings.Fields(lines[1])
	if r, err := strconv.ParseFloat(f[len(f)-1], 64); err != nil || math.Abs(r-want["http://a.test/"]) > 1e-5 {
		t.Errorf("cdx rank of a.test on day 2: %q, want %.6g", lines[1], want["http://a.test/"])
	}
	if l1 > 1e-3 || sum.Vertices != int64(len(want)) {
		t.Errorf("L1 vs gonum %.3g, %d vertices (want %d)", l1, sum.Vertices, len(want))
	}
	// Another member's prepare reads every page a node owns: a member's
	// comes at most once in rank.DefaultPrepareGap, so its second run at
	// once fails at the other members.
	if _, err := lr.Nodes[1].RunRank(ctx, day, rank.Options{}); err == nil || !strings.Contains(err.Error(), rank.ErrBusy.Error()) {
		t.Errorf("a second run at once: %v, want the members busy", err)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// gonumOf is gonum's PageRank of g, by URL.
func gonumOf(g map[string][]string) map[string]float64 {
	ids := map[string]int64{}
	var names []string
	dg := simple.NewDirectedGraph()
	node := func(u string) simple.Node {
		i, ok := ids[u]
		if !ok {
			i = int64(len(names))
			ids[u] = i
			names = append(names, u)
			dg.AddNode(simple.Node(i))
		}
		return simple.Node(i)
	}
	for s, ts := range g {
		sn := node(s)
		for _, u := range ts {
			if u != s {
				dg.SetEdge(dg.NewEdge(sn, node(u)))
			}
		}
	}
	out := map[string]float64{}
	for i, v := range network.PageRankSparse(dg, rank.DefaultDamping, 1e-12) {
		out[names[i]] = v
	}
	return out
}

// TestRankRingBench measures a PageRank run on real libp2p nodes on
// loopback over the sample web's pages (each stored at its owner):
// wall time per iteration and bytes sent per edge and iteration, and
// checks the ranks against gonum. Behind HEROD_RANK_RING=PAGES (e.g.
// 3000); HEROD_RANK_RING_NODES (default 4).
func TestRankRingBench(t *testing.T) {
	pages, _ := strconv.Atoi(os.Getenv("HEROD_RANK_RING"))
	if pages <= 0 {
		t.Skip("set HEROD_RANK_RING=pages")
	}
	nodes, _ := strconv.Atoi(os.Getenv("HEROD_RANK_RING_NODES"))
	if nodes <= 0 {
		nodes = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := sampleweb.New(sampleweb.Config{Pages: pages})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lr, err := StartLocalRing(ctx, t.TempDir(), nodes, Config{VirtualServers: 4, StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: -1, LinkSweep: -1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { lr.Close() }()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Minute)
	g := map[string][]string{}
	for _, u := range w.Reachable(0) {
		st, body := w.Body(0, u)
		c := archive.Capture{URL: u, Time: now, Status: st, Header: http.Header{"Content-Type": {"text/html"}}, Body: body}
		if _, _, err := lr.Owner(id.OfString(u)).store.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
		g[u] = nil
		if st == 200 {
			base, _ := url.Parse(u)
			g[u], _ = crawl.ExtractRequisites(base, "text/html", body)
		}
	}
	want := gonumOf(g)
	s, err := lr.Nodes[0].RunRank(ctx, lr.Nodes[0].store.DayOf(now), rank.Options{Tolerance: -1, Iterations: 30})
	if err != nil {
		t.Fatal(err)
	}
	var l1 float64
	for u, v := range want {
		got, _, err := lr.Owner(id.OfString(u)).Rank(ctx, u, s.Day)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		l1 += math.Abs(got - v)
	}
	t.Logf("%d nodes on loopback, %d vertices, %d edges: %v per iteration, %.2f bytes/edge/iteration (%d in steps, %d registering), whole run %v; L1 vs gonum %.1e (30 iterations)",
		nodes, s.Vertices, s.Edges, s.PerIteration, s.PerEdge, s.StepBytes, s.RegisterBytes, s.Took, l1)
	if l1 > 1e-3 {
		t.Errorf("L1 vs gonum %.3g", l1)
	}
}
