package search

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// world is a ring of real nodes with one virtual server each, whose
// membership tests change: every fakeRing reads it.
type world struct {
	mu    sync.Mutex
	nodes []ring.Node // sorted by ID
}

func (w *world) add(n ring.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodes = append(w.nodes, n)
	slices.SortFunc(w.nodes, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
}

func (w *world) succ(key id.ID) ring.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.nodes {
		if n.ID.Cmp(key) >= 0 {
			return n
		}
	}
	return w.nodes[0]
}

// holds reports whether peer is one of the k holders of key.
func (w *world) holds(peer string, key id.ID, k int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.nodes, func(n ring.Node) bool { return n.ID.Cmp(key) >= 0 })
	if i < 0 {
		i = 0
	}
	for j := range min(k, len(w.nodes)) {
		if w.nodes[(i+j)%len(w.nodes)].Peer == peer {
			return true
		}
	}
	return false
}

// fakeRing is one node's view of the world: exact, as after
// stabilization.
type fakeRing struct {
	w    *world
	self string
}

func (f fakeRing) OwnerVnode(key id.ID) (ring.Node, bool) {
	n := f.w.succ(key)
	return n, n.Peer == f.self
}

func (f fakeRing) Lookup(_ context.Context, key id.ID) (ring.Node, error) { return f.w.succ(key), nil }

func (f fakeRing) Vnodes() []ring.Node {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	var out []ring.Node
	for _, n := range f.w.nodes {
		if n.Peer == f.self {
			out = append(out, n)
		}
	}
	return out
}

func (f fakeRing) Predecessor(v id.ID) (ring.Node, bool) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	i := slices.IndexFunc(f.w.nodes, func(n ring.Node) bool { return n.ID == v })
	if i < 0 {
		return ring.Node{}, false
	}
	return f.w.nodes[(i+len(f.w.nodes)-1)%len(f.w.nodes)], true
}

// SuccessorsFrom walks the world from owner: owner and the nodes after
// it on up to k distinct peers (one virtual server each here).
func (f fakeRing) SuccessorsFrom(_ context.Context, owner ring.Node, k int) ([]ring.Node, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	i := slices.IndexFunc(f.w.nodes, func(n ring.Node) bool { return n.ID == owner.ID })
	if i < 0 {
		return []ring.Node{owner}, fmt.Errorf("fake ring: %s is not a member", owner.ID.Short())
	}
	out := []ring.Node{owner}
	seen := map[string]bool{owner.Peer: true}
	for j := 1; j < len(f.w.nodes) && len(out) < k; j++ {
		n := f.w.nodes[(i+j)%len(f.w.nodes)]
		if !seen[n.Peer] {
			seen[n.Peer] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// syncNode is a member: its host, kit and search service.
type syncNode struct {
	h  host.Host
	k  *kit.Kit
	sv *Service
	v  ring.Node
}

// syncRing starts members on the hosts, at even places of the circle
// (the i-th of n at i/n of it), K = k; none is in the world until join.
func syncRing(t testing.TB, w *world, hs []host.Host, k int) []*syncNode {
	t.Helper()
	circle := new(big.Int).Lsh(big.NewInt(1), id.Bits)
	var out []*syncNode
	for i, h := range hs {
		st, err := fts.OpenStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c := ring.Contact{Peer: h.ID().String(), Addr: fmt.Sprintf("node%d", i)}
		at := new(big.Int).Div(new(big.Int).Mul(circle, big.NewInt(int64(2*i+1))), big.NewInt(int64(2*len(hs))))
		sn := &syncNode{h: h, v: ring.Node{ID: id.FromBig(at), Contact: c}}
		sn.sv = &Service{Store: st, Self: c, Ring: fakeRing{w: w, self: c.Peer}, K: k, Open: p2ptest.Opener(h)}
		sn.k = kit.New(kit.Config{Host: h, Gate: func(s network.Stream) (ring.Node, error) {
			return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, nil
		}})
		sn.k.MustHandle(sn.sv.Spec())
		sn.k.MustHandle(sn.sv.SyncSpec())
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go sn.sv.servePulls(ctx)
		out = append(out, sn)
	}
	return out
}

// postings returns n postings of n/4 terms, four URLs a term.
func postings(n int) []fts.Posting {
	ps := make([]fts.Posting, 0, n)
	for i := range n {
		u := fmt.Sprintf("http://h%d.example/page/%d", i%7, i%4)
		ps = append(ps, fts.Posting{Term: fmt.Sprintf("w%d", i/4), Key: id.OfString(u), URL: u,
			From: 1000, To: fts.Open, TF: 1, DocLen: 10})
	}
	return ps
}

// held returns the postings of a store, by identity.
func held(t testing.TB, st *fts.Store) map[SyncCursor]fts.Posting {
	t.Helper()
	m := map[SyncCursor]fts.Posting{}
	var a id.ID
	if err := st.Range(context.Background(), a, a, func(p fts.Posting) error {
		m[cursorOf(p)] = p
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// converged reports which node lacks a posting it holds by the ring's
// placement, or holds one with another end than want's.
func converged(t testing.TB, w *world, ns []*syncNode, want []fts.Posting, k int) error {
	for _, n := range ns {
		got := held(t, n.sv.Store)
		for _, p := range want {
			if !w.holds(n.v.Peer, fts.TermKey(p.Term), k) {
				continue
			}
			q, ok := got[cursorOf(p)]
			if !ok || q.To != p.To {
				return fmt.Errorf("%s: posting %s/%s: held %v, end %d, want %d", n.v.Addr, p.Term, p.URL, ok, q.To, p.To)
			}
		}
	}
	return nil
}

// putAt stores each posting at its holders but those skip names.
func putAt(t *testing.T, w *world, ns []*syncNode, ps []fts.Posting, k int, skip func(n *syncNode, p fts.Posting) bool) {
	t.Helper()
	for _, n := range ns {
		var mine []fts.Posting
		for _, p := range ps {
			if w.holds(n.v.Peer, fts.TermKey(p.Term), k) && !skip(n, p) {
				mine = append(mine, p)
			}
		}
		if err := n.sv.Store.Put(context.Background(), mine); err != nil {
			t.Fatal(err)
		}
	}
}

// waitPulls waits until no node has a pull request queued or running.
func waitPulls(t *testing.T, ns []*syncNode) {
	t.Helper()
	testwait.For(t, "pull requests served", 30*time.Second, func() error {
		for _, n := range ns {
			if p := n.sv.SyncStats().Pending; p > 0 {
				return fmt.Errorf("%s: %d pull requests", n.v.Addr, p)
			}
		}
		return nil
	})
}

func rounds(t *testing.T, ns []*syncNode) {
	t.Helper()
	for _, n := range ns {
		if err := n.sv.SyncRound(context.Background()); err != nil {
			t.Fatalf("%s: %v", n.v.Addr, err)
		}
	}
}

// TestSyncMissedHolder: a holder that was down while postings were
// indexed, and a holder that missed a posting's end, get them from the
// range's other holders by sync rounds, no owner restarting.
func TestSyncMissedHolder(t *testing.T) {
	const k = 3
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 5), k)
	for _, n := range ns {
		w.add(n.v)
	}
	ps := postings(4000)
	down := ns[2]
	putAt(t, w, ns, ps, k, func(n *syncNode, _ fts.Posting) bool { return n == down })
	// An end reaches one holder only: every holder must learn it. A
	// store keeps one end a version, so every posting of ps[0]'s
	// version ends with it.
	for i := range ps {
		if ps[i].Key == ps[0].Key && ps[i].From == ps[0].From {
			ps[i].To = 5000
		}
	}
	ended := ps[:1]
	var first *syncNode
	for _, n := range ns {
		if w.holds(n.v.Peer, fts.TermKey(ended[0].Term), k) && n != down {
			first = n
			break
		}
	}
	if err := first.sv.Store.Put(context.Background(), ended[:1]); err != nil {
		t.Fatal(err)
	}
	if converged(t, w, ns, ps[:1], k) == nil {
		t.Fatal("the end is everywhere before any sync")
	}
	rounds(t, ns)
	testwait.For(t, "every holder holds every posting of its terms", 30*time.Second, func() error {
		return converged(t, w, ns, ps, k)
	})
	waitPulls(t, ns)
	if got := down.sv.SyncStats().Pulled; got == 0 {
		t.Error("the holder that was down pulled nothing")
	}
	// In sync: a second round pulls nothing and each pair costs one
	// sums request.
	var pulled, bytes, pairs int64
	for _, n := range ns {
		st := n.sv.SyncStats()
		pulled, bytes, pairs = pulled+st.Pulled, bytes+st.Bytes, pairs+st.InSync
	}
	rounds(t, ns)
	var pulled2, bytes2, pairs2 int64
	for _, n := range ns {
		st := n.sv.SyncStats()
		pulled2, bytes2, pairs2 = pulled2+st.Pulled, bytes2+st.Bytes, pairs2+st.InSync
	}
	if pulled2 != pulled {
		t.Errorf("a round in sync pulled %d postings", pulled2-pulled)
	}
	if n := pairs2 - pairs; n != int64(len(ns)*(k-1)) {
		t.Errorf("%d pairs in sync, want %d", n, len(ns)*(k-1))
	}
	per := (bytes2 - bytes) / (pairs2 - pairs)
	t.Logf("in sync: %d bytes a holder pair a round (request and reply frames)", per)
	if per > 512 {
		t.Errorf("in sync: %d bytes a pair, want ≤ 512", per)
	}
}

// TestSyncNewHolder: a node that joins takes over part of a range and
// becomes a replica of others; sync gives it every posting of the terms
// it now holds.
func TestSyncNewHolder(t *testing.T) {
	const k = 2
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 4), k)
	old, fresh := ns[:3], ns[3]
	for _, n := range old {
		w.add(n.v)
	}
	ps := postings(8000)
	putAt(t, w, old, ps, k, func(*syncNode, fts.Posting) bool { return false })
	// The new node's virtual server lands between two old ones.
	fresh.v.ID = id.FromBig(new(big.Int).Rsh(new(big.Int).Add(
		new(big.Int).SetBytes(old[0].v.ID[:]), new(big.Int).SetBytes(old[1].v.ID[:])), 1))
	w.add(fresh.v)
	if converged(t, w, ns, ps, k) == nil {
		t.Fatal("the new holder holds its range before any sync")
	}
	start := time.Now()
	rounds(t, ns)
	testwait.For(t, "the new holder holds its range", 30*time.Second, func() error {
		return converged(t, w, ns, ps, k)
	})
	waitPulls(t, ns)
	st := fresh.sv.SyncStats()
	t.Logf("new holder: %d postings pulled in %v, %d sync bytes asked", st.Pulled, time.Since(start), st.Bytes)
	if st.Pulled == 0 {
		t.Error("the new holder pulled nothing")
	}
}

// TestSyncPurged: sync does not bring back the postings of a purged
// capture.
func TestSyncPurged(t *testing.T) {
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 2), 2)
	for _, n := range ns {
		w.add(n.v)
	}
	ps := postings(400)
	if err := ns[1].sv.Store.Put(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	bad := ps[0].URL
	ns[0].sv.PurgeFilter = func() func(string, int64) bool {
		return func(u string, _ int64) bool { return u == bad }
	}
	rounds(t, ns)
	want := 0
	for _, p := range ps {
		if p.URL != bad {
			want++
		}
	}
	testwait.For(t, "node 0 pulled the postings not purged", 30*time.Second, func() error {
		if got := len(held(t, ns[0].sv.Store)); got != want {
			return fmt.Errorf("%d postings, want %d", got, want)
		}
		return nil
	})
	for c := range held(t, ns[0].sv.Store) {
		if c.Key == id.OfString(bad) {
			t.Fatalf("a purged capture's posting %s was pulled", c.Term)
		}
	}
}

func TestSplit(t *testing.T) {
	var zero id.ID
	a, b := id.OfString("a"), id.OfString("b")
	for _, r := range []KeyRange{{a, b}, {b, a}, {zero, zero}, {a, a.AddPow2(2)}} {
		parts := split(r, 16)
		if parts[0].From != r.From || parts[len(parts)-1].To != r.To {
			t.Errorf("%v: parts from %v to %v", r, parts[0].From, parts[len(parts)-1].To)
		}
		for i := 1; i < len(parts); i++ {
			if parts[i].From != parts[i-1].To {
				t.Errorf("%v: part %d does not start where %d ends", r, i, i-1)
			}
		}
		for _, k := range []id.ID{a, b, id.OfString("c"), id.OfString("d")} {
			if n := len(slices.DeleteFunc(slices.Clone(parts), func(p KeyRange) bool { return !p.Has(k) })); r.Has(k) != (n == 1) {
				t.Errorf("%v: key %s in %d parts, in range %v", r, k.Short(), n, r.Has(k))
			}
		}
	}
}

// TestSyncListPages: a list pages through a range by cursor, each
// posting once, whatever order the store keeps.
func TestSyncListPages(t *testing.T) {
	st, err := fts.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := postings(1000)
	if err := st.Put(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	sv := &Service{Store: st}
	rs := split(KeyRange{}, 4)[1:3]
	var after *SyncCursor
	seen := map[SyncCursor]bool{}
	for pages := 0; ; pages++ {
		page, next, err := sv.listRanges(context.Background(), rs, after, 97)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			c := cursorOf(p)
			if seen[c] || !inAny(rs, c.TermKey) {
				t.Fatalf("posting %v twice or outside the ranges", c)
			}
			seen[c] = true
		}
		if next == nil {
			break
		}
		after = next
	}
	want := 0
	for _, p := range ps {
		if inAny(rs, fts.TermKey(p.Term)) {
			want++
		}
	}
	if len(seen) != want {
		t.Errorf("listed %d postings, want %d", len(seen), want)
	}
}

// TestSyncListBytes: a page of long URLs is cut at about listBytes, and
// the cursor goes on from where it was cut.
func TestSyncListBytes(t *testing.T) {
	st, err := fts.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	long := strings.Repeat("x", 7000)
	var ps []fts.Posting
	for i := range 1500 {
		u := fmt.Sprintf("http://long.example/%d/%s", i, long)
		ps = append(ps, fts.Posting{Term: fmt.Sprintf("w%d", i%40), Key: id.OfString(u), URL: u, From: 1, To: fts.Open, TF: 1, DocLen: 3})
	}
	if err := st.Put(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	sv := &Service{Store: st}
	var after *SyncCursor
	total, pages := 0, 0
	for {
		page, next, err := sv.listRanges(context.Background(), []KeyRange{{}}, after, maxListPostings)
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, p := range page {
			size += len(p.URL)
		}
		if size > listBytes+8<<10 {
			t.Fatalf("page of %d bytes of URLs, want about %d at most", size, listBytes)
		}
		total, pages = total+len(page), pages+1
		if next == nil {
			break
		}
		after = next
	}
	if total != len(ps) || pages < 2 {
		t.Errorf("%d postings in %d pages, want %d in 2 or more", total, pages, len(ps))
	}
}

// TestRunSyncOnChange: a change of the ring runs a round within
// SyncSettle, long before the period.
func TestRunSyncOnChange(t *testing.T) {
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 2), 2)
	for _, n := range ns {
		w.add(n.v)
	}
	if err := ns[1].sv.Store.Put(context.Background(), postings(400)); err != nil {
		t.Fatal(err)
	}
	ns[0].sv.SyncInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan ring.Event, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ns[0].sv.RunSync(ctx, events)
	}()
	events <- ring.Event{Kind: ring.SuccessorsChanged, Vnode: ns[0].v}
	testwait.For(t, "a round after the change", 10*SyncSettle, func() bool {
		return ns[0].sv.SyncStats().Pulled > 0
	})
	cancel()
	<-done
}

// TestSumsCached: a range's digest is read from the store once while it
// writes nothing, whether this node's round or a holder asks; a write
// makes the next digest a scan that sees it.
func TestSumsCached(t *testing.T) {
	ctx := context.Background()
	w := &world{}
	sn := syncRing(t, w, p2ptest.Hosts(t, 1), 1)[0]
	w.add(sn.v)
	sv := sn.sv
	if err := sv.Store.Put(ctx, postings(400)); err != nil {
		t.Fatal(err)
	}
	rs := []KeyRange{{From: id.ID{}, To: id.ID{0x80}}, {From: id.ID{0x80}, To: id.ID{}}}
	first, err := sv.rangeSums(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	if first[0].Count+first[1].Count != 400 {
		t.Fatalf("digests count %d postings, want 400", first[0].Count+first[1].Count)
	}
	for range 3 {
		again, err := sv.rangeSums(ctx, rs)
		if err != nil || !slices.Equal(again, first) {
			t.Fatalf("digest again: %v, %v", again, err)
		}
	}
	if n := sv.SyncStats().Scans; n != 1 {
		t.Fatalf("%d scans for four digests of unchanged ranges, want 1", n)
	}
	if err := sv.Store.Put(ctx, []fts.Posting{{Term: "fresh", Key: id.OfString("http://n.example/"), URL: "http://n.example/",
		From: 1000, To: fts.Open, TF: 1, DocLen: 10}}); err != nil {
		t.Fatal(err)
	}
	after, err := sv.rangeSums(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Count+after[1].Count != 401 || sv.SyncStats().Scans != 2 {
		t.Fatalf("after a write: %d postings in %d scans, want 401 in 2", after[0].Count+after[1].Count, sv.SyncStats().Scans)
	}
}
