package rank

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"

	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/graph/network"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// memRing is an in-memory ring: members with a few virtual servers
// each, every request carried by calling the member's Engine, its
// header and bodies serialized as on the wire and counted.
type memRing struct {
	engines map[string]*Engine
	vnodes  []ring.Node // sorted by id
	bytes   atomic.Int64
}

func (m *memRing) Call(ctx context.Context, to ring.Contact, h Header, body []byte) (Reply, []byte, error) {
	e := m.engines[to.Peer]
	if e == nil {
		return Reply{}, nil, fmt.Errorf("no member %s", to.Peer)
	}
	hb, _ := json.Marshal(h)
	var h2 Header
	if err := json.Unmarshal(hb, &h2); err != nil {
		return Reply{}, nil, err
	}
	rep, rb, err := e.Handle(ctx, h2, slices.Clone(body))
	if err != nil {
		return Reply{}, nil, fmt.Errorf("%w: %v", errRemote, err)
	}
	repb, _ := json.Marshal(rep)
	m.bytes.Add(int64(frameSize(len(hb)) + frameSize(len(body)) + frameSize(len(repb)) + frameSize(len(rb))))
	return rep, rb, nil
}

// frameSize is the bytes of a frame of n bytes (wire.WriteFrame's
// uvarint length prefix).
func frameSize(n int) int {
	var b [16]byte
	w := &sliceWriter{b: b[:0]}
	_ = wire.WriteFrame(w, make([]byte, n))
	return len(w.b)
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func (m *memRing) locate(_ context.Context, key id.ID) (ring.Node, error) {
	i, _ := slices.BinarySearchFunc(m.vnodes, key, func(n ring.Node, k id.ID) int { return n.ID.Cmp(k) })
	return m.vnodes[i%len(m.vnodes)], nil
}

// newMemRing builds members of vnodes virtual servers each over the
// graph g: member i's Graph returns the sources it owns.
func newMemRing(t testing.TB, members, vnodes int, g map[string][]string) (*memRing, []ring.Contact, []*Store) {
	m := &memRing{engines: map[string]*Engine{}}
	var cs []ring.Contact
	for i := range members {
		c := ring.Contact{Peer: fmt.Sprintf("peer%d", i), Addr: fmt.Sprintf("127.0.0.%d:1", i+2)}
		cs = append(cs, c)
		for v := range vnodes {
			m.vnodes = append(m.vnodes, ring.Node{ID: id.OfString(fmt.Sprint(i, "/", v)), Contact: c, Index: v})
		}
	}
	slices.SortFunc(m.vnodes, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
	var stores []*Store
	for _, c := range cs {
		st, err := OpenStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores = append(stores, st)
		m.engines[c.Peer] = &Engine{Self: c, Transport: m, Locate: m.locate, Store: st,
			Graph: func(ctx context.Context, day int64, maxBytes int64) (map[string][]string, error) {
				own := map[string][]string{}
				var n int64
				for s, ts := range g {
					if o, _ := m.locate(ctx, id.OfString(s)); o.Peer == c.Peer {
						if n += PageBytes(s, ts); n > maxBytes {
							return nil, ErrTooLarge
						}
						own[s] = ts
					}
				}
				return own, nil
			}}
	}
	return m, cs, stores
}

// gonumRanks is the single-process PageRank of g (self-links dropped).
func gonumRanks(g map[string][]string) map[string]float64 {
	ids := map[string]int64{}
	names := []string{}
	node := func(u string) int64 {
		if i, ok := ids[u]; ok {
			return i
		}
		ids[u] = int64(len(names))
		names = append(names, u)
		return ids[u]
	}
	dg := simple.NewDirectedGraph()
	for _, s := range slices.Sorted(mapKeys(g)) {
		si := node(s)
		if dg.Node(si) == nil {
			dg.AddNode(simple.Node(si))
		}
		for _, t := range g[s] {
			ti := node(t)
			if dg.Node(ti) == nil {
				dg.AddNode(simple.Node(ti))
			}
			if ti != si {
				dg.SetEdge(dg.NewEdge(simple.Node(si), simple.Node(ti)))
			}
		}
	}
	pr := network.PageRankSparse(dg, DefaultDamping, 1e-12)
	out := map[string]float64{}
	for i, v := range pr {
		out[names[i]] = v
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) { return keys(m) }

// sampleGraph is the link graph of the sample web on day: every page
// reachable that day, with the links a reader follows.
func sampleGraph(t testing.TB, pages, day int) map[string][]string {
	t.Helper()
	w := sampleweb.New(sampleweb.Config{Pages: pages})
	if err := w.Start(context.Background()); err != nil {
		t.Skipf("sample web: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	g := map[string][]string{}
	for _, u := range w.Reachable(day) {
		st, body := w.Body(day, u)
		if st != 200 {
			g[u] = nil
			continue
		}
		base, _ := url.Parse(u)
		links, _ := crawl.ExtractRequisites(base, "text/html", body)
		g[u] = links
	}
	return g
}

// ringRanks collects the ranks every member stored for day.
func ringRanks(t testing.TB, stores []*Store, urls []string, day int64) map[string]float64 {
	out := map[string]float64{}
	for _, u := range urls {
		for _, st := range stores {
			if v, _, err := st.Rank(u, day); err == nil {
				if _, dup := out[u]; dup {
					t.Fatalf("%s ranked by two members", u)
				}
				out[u] = v
			}
		}
	}
	return out
}

func l1(a, b map[string]float64) (float64, int) {
	var d float64
	missing := 0
	for u, v := range a {
		w, ok := b[u]
		if !ok {
			missing++
		}
		d += math.Abs(v - w)
	}
	for u, w := range b {
		if _, ok := a[u]; !ok {
			missing++
			d += w
		}
	}
	return d, missing
}

// TestRingMatchesGonum: on the sample web's link graph of two days, the
// ring's ranks are gonum's within 1e-3 in L1, and every vertex is
// ranked by exactly one member.
func TestRingMatchesGonum(t *testing.T) {
	for _, day := range []int{0, 3} {
		g := sampleGraph(t, 300, day)
		want := gonumRanks(g)
		m, members, stores := newMemRing(t, 4, 3, g)
		sum, err := (&Coordinator{Transport: m}).Run(context.Background(), members, Options{Day: int64(day)})
		if err != nil {
			t.Fatal(err)
		}
		got := ringRanks(t, stores, slices.Collect(mapKeys(want)), int64(day))
		d, missing := l1(want, got)
		t.Logf("day %d: %d vertices, %d edges, %d iterations, L1 vs gonum %.2e, sum %.6f, %v/iteration, %.1f bytes/edge/iteration",
			day, sum.Vertices, sum.Edges, sum.Iterations, d, sum.Sum, sum.PerIteration, sum.PerEdge)
		if missing != 0 || d > 1e-3 || int(sum.Vertices) != len(want) {
			t.Fatalf("day %d: L1 %.3g, %d missing, %d vertices (gonum %d)", day, d, missing, sum.Vertices, len(want))
		}
		if math.Abs(sum.Sum-1) > 1e-9 {
			t.Errorf("ranks sum to %v", sum.Sum)
		}
	}
}

// TestRankSmall: a hand-made graph with a dangling page and a self-link.
func TestRankSmall(t *testing.T) {
	g := map[string][]string{
		"http://a/": {"http://b/", "http://c/", "http://a/"},
		"http://b/": {"http://c/"},
		"http://c/": {"http://a/", "http://d/"},
		// http://d/ is only a target: dangling
	}
	want := gonumRanks(g)
	m, members, stores := newMemRing(t, 3, 2, g)
	if _, err := (&Coordinator{Transport: m}).Run(context.Background(), members, Options{Day: 7, Tolerance: -1, Iterations: 60}); err != nil {
		t.Fatal(err)
	}
	got := ringRanks(t, stores, slices.Collect(mapKeys(want)), 7)
	if d, missing := l1(want, got); d > 1e-6 || missing > 0 {
		t.Fatalf("L1 %.3g, %d missing: got %v want %v", d, missing, got, want)
	}
	// a later day without a run answers with the newest run before it
	if _, info, err := stores[0].Rank("http://zzz/", 9); err == nil || info.Day != 7 {
		t.Errorf("rank of an unknown URL: %v %+v", err, info)
	}
}

func TestContribsRoundTrip(t *testing.T) {
	cs := []contrib{{0, 0.5}, {3, 1e-9}, {1 << 20, 0}}
	got, err := decodeContribs(encodeContribs(cs), len(cs), 1<<21)
	if err != nil || !slices.Equal(got, cs) {
		t.Fatalf("got %v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"past limit": encodeContribs([]contrib{{5, 1}}),
		"not sorted": encodeContribs([]contrib{{1, 1}, {1, 1}}),
		"negative":   encodeContribs([]contrib{{0, -1}}),
		"NaN":        encodeContribs([]contrib{{0, math.NaN()}}),
		"short":      encodeContribs([]contrib{{0, 1}})[:4],
	} {
		n := 1
		if name == "not sorted" {
			n = 2
		}
		if _, err := decodeContribs(b, n, 4); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeContribs(f *testing.F) {
	f.Add(encodeContribs([]contrib{{1, 0.25}, {9, 0.5}}), 2)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		cs, err := decodeContribs(b, n, 1000)
		if err == nil && len(cs) != n {
			t.Fatalf("%d for %d", len(cs), n)
		}
	})
}

func FuzzDecodeURLs(f *testing.F) {
	f.Add(encodeURLs([]string{"http://a/", "http://b/"}), 2)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		us, err := decodeURLs(b, n)
		if err == nil && len(us) != n {
			t.Fatalf("%d for %d", len(us), n)
		}
	})
}

// TestRankBench measures a run on a larger sample web: wall time per
// iteration and bytes on the wire per edge and iteration, counted by
// the in-memory transport as the frames would be sent. Behind
// HEROD_RANK_BENCH (pages; e.g. 3000).
func TestRankBench(t *testing.T) {
	n := os.Getenv("HEROD_RANK_BENCH")
	if n == "" {
		t.Skip("set HEROD_RANK_BENCH=pages")
	}
	var pages int
	fmt.Sscan(n, &pages)
	g := sampleGraph(t, pages, 0)
	t0 := time.Now()
	want := gonumRanks(g)
	single := time.Since(t0)
	m, members, stores := newMemRing(t, 4, 8, g)
	s, err := (&Coordinator{Transport: m}).Run(context.Background(), members, Options{Tolerance: -1, Iterations: 50})
	if err != nil {
		t.Fatal(err)
	}
	got := ringRanks(t, stores, slices.Collect(mapKeys(want)), 0)
	d, _ := l1(want, got)
	base := singleIteration(g, 50)
	t.Logf("%d vertices, %d edges, 4 members: %v/iteration, %.1f× one process's (%v/iteration; gonum's whole run %v), step bytes %.2f/edge/iteration (frames counted: %d bytes in all, %.2f/edge/iteration), L1 vs gonum %.1e",
		s.Vertices, s.Edges, s.PerIteration, float64(s.PerIteration)/float64(base), base, single, s.PerEdge, m.bytes.Load(),
		float64(m.bytes.Load())/float64(s.Edges)/float64(s.Iterations), d)
}

// singleIteration times one power iteration of g in one process, over
// an edge list of vertex numbers (the baseline of TestRankBench).
func singleIteration(g map[string][]string, iters int) time.Duration {
	ids := map[string]int{}
	num := func(u string) int {
		if i, ok := ids[u]; ok {
			return i
		}
		ids[u] = len(ids)
		return ids[u]
	}
	var from, to []int
	deg := map[int]int{}
	for s, ts := range g {
		si := num(s)
		seen := map[string]bool{}
		for _, t := range ts {
			if t != s && !seen[t] {
				seen[t] = true
				from, to = append(from, si), append(to, num(t))
				deg[si]++
			}
		}
	}
	n := len(ids)
	degs := make([]float64, n)
	for i, d := range deg {
		degs[i] = float64(d)
	}
	r, next := make([]float64, n), make([]float64, n)
	for i := range r {
		r[i] = 1 / float64(n)
	}
	start := time.Now()
	for range iters {
		var dangle float64
		for i, v := range r {
			if degs[i] == 0 {
				dangle += v
			}
			next[i] = 0
		}
		for k := range from {
			next[to[k]] += r[from[k]] / degs[from[k]]
		}
		for i := range next {
			next[i] = (1-DefaultDamping)/float64(n) + DefaultDamping*(dangle/float64(n)+next[i])
		}
		r, next = next, r
	}
	return time.Since(start) / time.Duration(iters)
}

// TestEngineRefusesOutOfOrder: requests of an unknown run, steps out of
// order, registrations after the count and contributions to indices a
// member does not hold are refused and change nothing.
func TestEngineRefusesOutOfOrder(t *testing.T) {
	ctx := context.Background()
	g := map[string][]string{"http://a/": {"http://b/"}}
	m, members, _ := newMemRing(t, 2, 1, g)
	e := m.engines[members[0].Peer]
	call := func(h Header, body []byte) error { _, _, err := e.Handle(ctx, h, body); return err }
	if err := call(Header{Op: OpContrib, Run: "nope", Count: 1}, encodeContribs([]contrib{{0, 1}})); err == nil {
		t.Error("contribution to an unknown run accepted")
	}
	if err := call(Header{Op: OpPrepare, Run: "r", Damping: 0.85}, nil); err != nil {
		t.Fatal(err)
	}
	if err := call(Header{Op: OpCount, Run: "r"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := call(Header{Op: OpRegister, Run: "r", Count: 1}, encodeURLs([]string{"http://late/"})); err == nil {
		t.Error("registration after the count accepted")
	}
	if err := call(Header{Op: OpStep, Run: "r", Step: 1, N: 2}, nil); err == nil {
		t.Error("step 1 before step 0 accepted")
	}
	if err := call(Header{Op: OpContrib, Run: "r", Step: 0, Count: 1}, encodeContribs([]contrib{{1000, 1}})); err == nil {
		t.Error("contribution past the vertices accepted")
	}
	if err := call(Header{Op: OpContrib, Run: "r", Step: 5, Count: 1}, encodeContribs([]contrib{{0, 1}})); err == nil {
		t.Error("contribution of a step far ahead accepted")
	}
	if err := call(Header{Op: "bogus", Run: "r"}, nil); err == nil {
		t.Error("unknown op accepted")
	}
}
