package node

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/politeness"
)

// uaSite is a test web host that records who asked what, and when: each
// node of the ring sends its own User-Agent (politeUAOf). It serves a
// robots.txt disallowing /private/, a root linking to pub and private
// pages, and the pages.
type uaSite struct {
	srv  *httptest.Server
	pub  int
	priv int

	mu   sync.Mutex
	reqs []uaRequest
}

type uaRequest struct {
	ua, path string
	at       time.Time
}

func newUASite(t *testing.T, pub, priv int) *uaSite {
	s := &uaSite{pub: pub, priv: priv}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *uaSite) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, uaRequest{ua: r.UserAgent(), path: r.URL.Path, at: time.Now()})
	s.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	case p == "/":
		w.Header().Set("Content-Type", "text/html")
		for i := range s.pub {
			fmt.Fprintf(w, "<a href=\"/pub/%d\">p</a>\n", i)
		}
		for i := range s.priv {
			fmt.Fprintf(w, "<a href=\"/private/%d\">x</a>\n", i)
		}
	case strings.HasPrefix(p, "/pub/"), strings.HasPrefix(p, "/private/"):
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<p>%s</p>", p)
	default:
		http.NotFound(w, r)
	}
}

// by returns the times of the requests sent with User-Agent ua, and the
// paths.
func (s *uaSite) by(ua string) ([]time.Time, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ts []time.Time
	var paths []string
	for _, r := range s.reqs {
		if r.ua == ua {
			ts = append(ts, r.at)
			paths = append(paths, r.path)
		}
	}
	return ts, paths
}

// politeUAOf is node i's User-Agent in the hostile politeness tests.
func politeUAOf(i int) string {
	return fmt.Sprintf("herodtest%d/0.1 (+https://example.org/herod-volunteer)", i)
}

// startHostilePoliteRing starts three real nodes crawling loopback at
// rate requests per second per host, each with its own User-Agent,
// without replication (what a node stores is what it fetched), and waits
// until every node agrees on the owners of the site's politeness keys.
func startHostilePoliteRing(t *testing.T, ctx context.Context, site *uaSite, rate float64) (*LocalRing, string) {
	t.Helper()
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{
		VirtualServers:      2,
		StabilizeInterval:   100 * time.Millisecond,
		FlushInterval:       20 * time.Millisecond,
		ReplicationInterval: -1,
		NoSync:              true,
		Crawl:               crawl.Config{HostRate: rate, Concurrency: 4, AllowPrivate: loopback},
	}, func(i int, c *Config) { c.Crawl.UserAgent = politeUAOf(i) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	u, err := url.Parse(site.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := politeness.RobotsKey(site.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitOwners(ctx, lr, []id.ID{rk, politeness.HostKey(u.Host)}); err != nil {
		t.Fatal(err)
	}
	return lr, u.Host
}

// TestHostileBudgetOwnerGrantsAll: the owner of a host's request budget
// grants every slot asked for at once. The honest nodes still send the
// host no more than the configured rate each (their local cap, CapBudget),
// checked by the times at which the host's server saw their requests.
func TestHostileBudgetOwnerGrantsAll(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const rate = 4.0
	site := newUASite(t, 36, 0)
	lr, host := startHostilePoliteRing(t, ctx, site, rate)
	liar := lr.Owner(politeness.HostKey(host))
	var lies, granted atomic.Int64
	liar.host.SetStreamHandler(politeness.BudgetProtocol, func(s network.Stream) {
		defer s.Close()
		var req politeness.BudgetRequest
		if err := wire.ReadJSON(bufio.NewReader(s), 4<<10, &req); err != nil {
			s.Reset()
			return
		}
		lies.Add(1)
		granted.Add(int64(req.Slots))
		_ = wire.WriteJSON(s, politeness.BudgetReply{Delays: make([]time.Duration, req.Slots)})
	})
	var honest []int
	for i, n := range lr.Nodes {
		if n != liar {
			honest = append(honest, i)
		}
	}
	start := time.Now()
	if err := lr.Nodes[honest[0]].Seed(ctx, []string{site.srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if lies.Load() == 0 {
		t.Fatal("no honest node asked the lying owner for slots")
	}
	// A node's cap releases its requests at least 1/rate apart, and a
	// request reaches the server after its release: the node's k-th
	// request arrives no earlier than k-1 intervals after the seed, however
	// loaded the machine. Released that way, its requests number at most
	// rate·W + 1 in a window of length W; one more allows for arrivals
	// bunched by a stall on a loaded machine.
	iv := time.Duration(float64(time.Second) / rate)
	for _, i := range honest {
		ts, _ := site.by(politeUAOf(i))
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for k, at := range ts {
			if min := time.Duration(k) * iv; at.Sub(start) < min {
				t.Fatalf("honest node %d: request %d arrived %s after the seed, before %s at %g/s", i, k+1, at.Sub(start), min, rate)
			}
		}
		for _, w := range []time.Duration{time.Second, 3 * time.Second} {
			limit := int(rate*w.Seconds()) + 2
			if got := maxInWindow(ts, w); got > limit {
				t.Errorf("honest node %d: %d requests in a %s window, at most %d at %g/s", i, got, w, limit, rate)
			}
		}
		if len(ts) > 1 {
			span := ts[len(ts)-1].Sub(ts[0])
			t.Logf("honest node %d: %d requests in %s (%.2f/s, rate %g/s), max %d in 1 s", i, len(ts),
				span.Round(time.Millisecond), float64(len(ts)-1)/span.Seconds(), rate, maxInWindow(ts, time.Second))
		}
	}
	var held int64
	for _, i := range honest {
		held += lr.Nodes[i].crawler.Stats().CapHeld
	}
	t.Logf("lying owner answered %d leases, granting %d slots at once; the honest nodes' caps held back %d", lies.Load(), granted.Load(), held)
}

// TestHostileRobotsOwnerLies: the owner of a site's robots.txt answers
// "404, allow everything". The honest nodes ask the second holder, find
// that it disagrees (or are the second holder themselves), fetch the file
// directly, and store no page it disallows.
func TestHostileRobotsOwnerLies(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const pub, priv = 12, 12
	site := newUASite(t, pub, priv)
	lr, _ := startHostilePoliteRing(t, ctx, site, 200)
	rk, err := politeness.RobotsKey(site.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	liar := lr.Owner(rk)
	var lies atomic.Int64
	liar.host.SetStreamHandler(politeness.RobotsProtocol, func(s network.Stream) {
		defer s.Close()
		var req politeness.RobotsRequest
		if err := wire.ReadJSON(bufio.NewReader(s), 4<<10, &req); err != nil {
			s.Reset()
			return
		}
		lies.Add(1)
		_ = wire.WriteJSON(s, politeness.RobotsReply{Record: crawl.RobotsRecord{Status: http.StatusNotFound, Fetched: time.Now()}})
	})
	var honest []int
	for i, n := range lr.Nodes {
		if n != liar {
			honest = append(honest, i)
		}
	}
	if err := lr.Nodes[honest[0]].Seed(ctx, []string{site.srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if lies.Load() == 0 {
		t.Fatal("no honest node asked the lying owner for robots.txt")
	}
	var unconfirmed int64
	for _, i := range honest {
		n := lr.Nodes[i]
		_, paths := site.by(politeUAOf(i))
		for _, p := range paths {
			if strings.HasPrefix(p, "/private/") {
				t.Errorf("honest node %d fetched disallowed %s", i, p)
			}
		}
		for j := range priv {
			u := fmt.Sprintf("%s/private/%d", site.srv.URL, j)
			if vs, err := n.store.Versions(ctx, u); err == nil && len(vs) > 0 {
				t.Errorf("honest node %d stored disallowed %s", i, u)
			}
		}
		st := n.PolitenessStats()
		unconfirmed += st.RobotsUnconfirmed
		t.Logf("honest node %d: robots asked %d, confirmed %d, unconfirmed %d (disagreed %d); fetched %d paths",
			i, st.RobotsAsked, st.RobotsConfirmed, st.RobotsUnconfirmed, st.RobotsDisagree, len(paths))
	}
	if unconfirmed == 0 {
		t.Error("no honest node found the owner's answer unconfirmed")
	}
	// The public pages were crawled all the same.
	var pubFetched int
	site.mu.Lock()
	for _, r := range site.reqs {
		if strings.HasPrefix(r.path, "/pub/") {
			pubFetched++
		}
	}
	site.mu.Unlock()
	if pubFetched < pub {
		t.Errorf("%d requests of public pages, want at least %d", pubFetched, pub)
	}
}

// TestRedirectChainAcrossNodes: an endless redirect chain, /r/N to
// /r/N+1, whose URLs belong to different nodes, is followed for
// MaxRedirects redirects ring-wide and no further: the depth travels with
// each target (redirectProtocol), to link replicas too.
func TestRedirectChainAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	for _, linkReplicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("LinkReplicas=%d", linkReplicas), func(t *testing.T) {
			testRedirectChainAcrossNodes(t, linkReplicas)
		})
	}
}

func testRedirectChainAcrossNodes(t *testing.T, linkReplicas int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const maxRedirects = 6
	var mu sync.Mutex
	hits := map[int]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/r/%d", &n); err != nil {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		hits[n]++
		mu.Unlock()
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n+1), http.StatusFound)
	}))
	defer srv.Close()
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{
		VirtualServers:      2,
		StabilizeInterval:   100 * time.Millisecond,
		FlushInterval:       20 * time.Millisecond,
		ReplicationInterval: -1,
		LinkReplicas:        linkReplicas,
		NoSync:              true,
		Crawl:               crawl.Config{HostRate: 200, MaxRedirects: maxRedirects, AllowPrivate: loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	keys := []id.ID{}
	for n := range maxRedirects + 2 {
		keys = append(keys, id.OfString(fmt.Sprintf("%s/r/%d", srv.URL, n)))
	}
	if err := waitOwners(ctx, lr, keys); err != nil {
		t.Fatal(err)
	}
	owners := map[*Node]bool{}
	for _, k := range keys {
		owners[lr.Owner(k)] = true
	}
	if len(owners) < 2 {
		t.Fatalf("the chain's URLs all belong to one node")
	}
	if err := lr.Nodes[0].Seed(ctx, []string{srv.URL + "/r/0"}); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(hits)
	mu.Unlock()
	for n, c := range got {
		if n > maxRedirects {
			t.Fatalf("/r/%d fetched %d times, chain bound %d (requests %v)", n, c, maxRedirects, got)
		}
	}
	for n := range maxRedirects + 1 {
		if got[n] == 0 {
			t.Errorf("/r/%d never fetched (requests %v)", n, got)
		}
	}
	var cut int64
	for _, n := range lr.Nodes {
		cut += n.crawler.Stats().ErrorsByKind[crawl.KindRedirectChain]
	}
	if cut < 1 {
		t.Errorf("redirect_chain never counted")
	}
	t.Logf("requests of /r/N: %v; chain cut %d times", got, cut)
}
