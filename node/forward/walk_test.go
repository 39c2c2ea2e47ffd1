package forward

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
)

// fakeRing is a static ring of virtual servers for testing walks: lookups
// are answered from the full membership, deliveries are recorded.
type fakeRing struct {
	nodes     []ring.Node // sorted by id
	down      map[string]bool
	got       map[id.ID][]string // primary deliveries per virtual server
	hopsOf    map[string]int     // hop count each URL was last delivered with
	replicaOf map[string][]string
	lookups   int
	wants     []int // Batch.Want of each primary delivery
	// localAnswers makes LocalOwner answer (a ring whose tables cover it).
	localAnswers bool
}

func newFakeRing(peers, vnodes int) *fakeRing {
	fr := &fakeRing{down: map[string]bool{}, got: map[id.ID][]string{}, hopsOf: map[string]int{}, replicaOf: map[string][]string{}}
	for p := 0; p < peers; p++ {
		c := ring.Contact{Peer: fmt.Sprintf("peer%d", p), Addr: fmt.Sprintf("127.0.%d.%d:4000", p/250, p%250+1)}
		for v := 0; v < vnodes; v++ {
			fr.nodes = append(fr.nodes, ring.Node{ID: ring.VirtualID(c.Addr, v), Contact: c, Index: v})
		}
	}
	slices.SortFunc(fr.nodes, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
	return fr
}

func (fr *fakeRing) ownerIndex(k id.ID) int {
	for i, n := range fr.nodes {
		if n.ID.Cmp(k) >= 0 {
			return i
		}
	}
	return 0
}

// LocalOwner answers like Lookup, without counting a lookup, when
// localAnswers is set.
func (fr *fakeRing) LocalOwner(k id.ID) (ring.Node, bool) {
	if !fr.localAnswers {
		return ring.Node{}, false
	}
	return fr.nodes[fr.ownerIndex(k)], true
}

func (fr *fakeRing) Lookup(_ context.Context, k id.ID) (ring.Node, error) {
	fr.lookups++
	return fr.nodes[fr.ownerIndex(k)], nil
}

func (fr *fakeRing) deliver(_ context.Context, to ring.Node, b Batch) ([]ring.Node, error) {
	if fr.down[to.Peer] {
		return nil, errors.New("connection refused")
	}
	if b.Replica {
		fr.replicaOf[to.Peer] = append(fr.replicaOf[to.Peer], b.URLs...)
	} else {
		fr.got[to.ID] = append(fr.got[to.ID], b.URLs...)
		for _, u := range b.URLs {
			fr.hopsOf[u] = b.Hops
		}
	}
	i := slices.IndexFunc(fr.nodes, func(n ring.Node) bool { return n.ID == to.ID })
	var succs []ring.Node
	for j := 1; j <= ReplySuccessors; j++ {
		succs = append(succs, fr.nodes[(i+j)%len(fr.nodes)])
	}
	if !b.Replica {
		fr.wants = append(fr.wants, b.Want)
	}
	return PickSuccessors(to.ID, succs, b.Want, b.Next), nil
}

func testLinks(n int) []pendingLink {
	var ls []pendingLink
	for i := 0; i < n; i++ {
		u := fmt.Sprintf("http://host%d.example/page/%d.html", i%7, i)
		ls = append(ls, pendingLink{url: u, key: id.OfString(u)})
	}
	slices.SortFunc(ls, func(a, b pendingLink) int { return a.key.Cmp(b.key) })
	return ls
}

func newTestForwarder(fr *fakeRing, replicas int) *Forwarder {
	f, err := New(Config{Ring: fr, Deliver: fr.deliver, Replicas: replicas, PerVnode: 1, LocalPeer: "peer0"})
	if err != nil {
		panic(err)
	}
	return f
}

func TestWalkDeliversToOwnersWithOneLookup(t *testing.T) {
	fr := newFakeRing(8, 4)
	f := newTestForwarder(fr, 1)
	links := testLinks(2000)
	done, failed := f.walk(context.Background(), links)
	if len(failed) != 0 || len(done) != len(links) {
		t.Fatalf("done %d, failed %d of %d", len(done), len(failed), len(links))
	}
	for _, l := range links {
		owner := fr.nodes[fr.ownerIndex(l.key)]
		if !slices.Contains(fr.got[owner.ID], l.url) {
			t.Fatalf("%s not delivered to its owner %s", l.url, owner.ID.Short())
		}
	}
	var total int
	for _, us := range fr.got {
		total += len(us)
	}
	if total != len(links) {
		t.Fatalf("%d deliveries for %d links", total, len(links))
	}
	if fr.lookups != 1 {
		t.Fatalf("a dense walk used %d lookups, want 1", fr.lookups)
	}
	// Keys past the highest id wrap to the first virtual server, which the
	// walk also visited at its start: at most one hop more than servers.
	if st := f.Stats(); st.Hops > int64(len(fr.got))+1 {
		t.Fatalf("hops %d, virtual servers visited %d", st.Hops, len(fr.got))
	}
}

func TestWalkSparseUsesSuccessorLists(t *testing.T) {
	fr := newFakeRing(16, 4) // 64 virtual servers, links for a few of them
	f := newTestForwarder(fr, 1)
	links := testLinks(5)
	done, failed := f.walk(context.Background(), links)
	if len(done) != 5 || len(failed) != 0 {
		t.Fatalf("done %d failed %d", len(done), len(failed))
	}
	if fr.lookups > 5 {
		t.Fatalf("%d lookups for 5 links", fr.lookups)
	}
}

func TestWalkKeepsLinksOfDeadOwners(t *testing.T) {
	fr := newFakeRing(4, 4)
	fr.down["peer2"] = true
	f := newTestForwarder(fr, 1)
	links := testLinks(500)
	done, failed := f.walk(context.Background(), links)
	if len(done)+len(failed) != len(links) {
		t.Fatalf("done %d + failed %d != %d", len(done), len(failed), len(links))
	}
	for _, l := range failed {
		if o := fr.nodes[fr.ownerIndex(l.key)]; o.Peer != "peer2" {
			t.Fatalf("%s failed but its owner %s is up", l.url, o.Peer)
		}
	}
	for _, l := range done {
		if o := fr.nodes[fr.ownerIndex(l.key)]; o.Peer == "peer2" {
			t.Fatalf("%s reported delivered to a dead owner", l.url)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no link belonged to the dead node; test is vacuous")
	}
}

func TestWalkReplicaMode(t *testing.T) {
	fr := newFakeRing(5, 2)
	f := newTestForwarder(fr, 3)
	links := testLinks(300)
	if _, failed := f.walk(context.Background(), links); len(failed) != 0 {
		t.Fatalf("%d failed", len(failed))
	}
	for _, l := range links {
		for _, p := range fr.replicaPeers(fr.ownerIndex(l.key), 3) {
			if !slices.Contains(fr.replicaOf[p], l.url) {
				t.Fatalf("%s: replica missing on %s", l.url, p)
			}
		}
	}
}

// replicaPeers returns the k-1 distinct real nodes after the virtual
// server at index i (not its own node) that replica mode delivers to.
func (fr *fakeRing) replicaPeers(i, k int) []string {
	holders := map[string]bool{fr.nodes[i].Peer: true}
	var out []string
	for j := 1; len(holders) < k && j <= ReplySuccessors; j++ {
		p := fr.nodes[(i+j)%len(fr.nodes)].Peer
		if !holders[p] {
			holders[p] = true
			out = append(out, p)
		}
	}
	return out
}

func TestForwarderRetriesUntilAcknowledged(t *testing.T) {
	fr := newFakeRing(3, 2)
	fr.down["peer1"] = true
	f := newTestForwarder(fr, 1)
	var urls []string
	for _, l := range testLinks(200) {
		urls = append(urls, l.url)
	}
	if err := f.Forward(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	f.flush(context.Background())
	if st := f.Stats(); st.Pending == 0 || !f.Busy() {
		t.Fatalf("links for a dead node were dropped: %+v", st)
	}
	fr.down["peer1"] = false
	f.flush(context.Background())
	if f.Busy() {
		t.Fatalf("links still pending after the node came back: %+v", f.Stats())
	}
	var total int
	for _, us := range fr.got {
		total += len(us)
	}
	if total != len(urls) {
		t.Fatalf("delivered %d of %d", total, len(urls))
	}
}

// TestForwarderSendsLinksOncePerDay: a link waiting or acknowledged today
// is not queued again (neither in memory nor in the outbox); a link passed
// back by a non-owner and a link whose delivery failed are, and on a new
// day every link travels again.
func TestForwarderSendsLinksOncePerDay(t *testing.T) {
	fr := newFakeRing(3, 2)
	ob, err := OpenOutbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	day := int64(7)
	f, err := New(Config{Ring: fr, Deliver: fr.deliver, Outbox: ob, PerVnode: 1000,
		LocalPeer: "peer0", Day: func() int64 { return day }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	delivered := func() int {
		n := 0
		for _, us := range fr.got {
			n += len(us)
		}
		return n
	}
	ls := testLinks(50)
	var urls []string
	for _, l := range ls {
		urls = append(urls, l.url)
	}
	// Page one and page two share every link: one copy waits.
	for range 2 {
		if err := f.Forward(ctx, urls); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ob.load(); err != nil || len(got) != len(urls) {
		t.Fatalf("outbox holds %d links (%v), want %d", len(got), err, len(urls))
	}
	if st := f.Stats(); st.Pending != len(urls) || st.Skipped != int64(len(urls)) {
		t.Fatalf("after two pages with the same links: %+v", st)
	}
	f.flush(ctx)
	if n := delivered(); n != len(urls) {
		t.Fatalf("delivered %d, want %d", n, len(urls))
	}
	// The same links later the same day: their owners have them.
	if err := f.Forward(ctx, urls); err != nil {
		t.Fatal(err)
	}
	if f.Busy() {
		t.Fatalf("links acknowledged today were queued again: %+v", f.Stats())
	}
	// A link passed back by a node that does not own it (views of the
	// ring disagree) travels again, or it would be lost.
	if err := f.enqueue(urls[:1], 1, nil); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.Pending != 1 {
		t.Fatalf("a link passed back was dropped: %+v", st)
	}
	f.flush(ctx)
	// A link whose owner was down is sent again.
	fr.down["peer1"] = true
	fresh := "http://host0.example/new.html"
	if err := f.Forward(ctx, []string{fresh}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.flush(ctx)
		if err := f.Forward(ctx, []string{fresh}); err != nil {
			t.Fatal(err)
		}
	}
	fr.down["peer1"] = false
	f.flush(ctx)
	if n := delivered(); n != len(urls)+2 {
		t.Fatalf("delivered %d, want %d", n, len(urls)+2)
	}
	// A new day: owners reset their URL-seen sets, links travel again.
	day++
	if err := f.Forward(ctx, urls); err != nil {
		t.Fatal(err)
	}
	f.flush(ctx)
	if n := delivered(); n != 2*len(urls)+2 {
		t.Fatalf("delivered %d on the second day, want %d", n, 2*len(urls)+2)
	}
	if got, err := ob.load(); err != nil || len(got) != 0 {
		t.Fatalf("outbox holds %d links after delivery (%v)", len(got), err)
	}
}

func TestOwnsAndNextOwner(t *testing.T) {
	mk := func(b byte) id.ID { var x id.ID; x[0] = b; return x }
	tests := []struct {
		owner, first, x byte
		want            bool
	}{
		{10, 5, 5, true}, {10, 5, 7, true}, {10, 5, 10, true}, {10, 5, 11, false},
		{3, 250, 255, true}, {3, 250, 2, true}, {3, 250, 4, false}, // wraps
		{5, 5, 5, true}, {5, 5, 6, false},
	}
	for _, tc := range tests {
		if got := owns(mk(tc.owner), mk(tc.first), mk(tc.x)); got != tc.want {
			t.Errorf("owns(%d, %d, %d) = %v", tc.owner, tc.first, tc.x, got)
		}
	}
	succs := []ring.Node{{ID: mk(20)}, {ID: mk(30)}, {ID: mk(40)}}
	if n, ok := nextOwner(mk(10), succs, mk(25)); !ok || n.ID != mk(30) {
		t.Errorf("nextOwner(25) = %v, %v", n.ID.Short(), ok)
	}
	if _, ok := nextOwner(mk(10), succs, mk(41)); ok {
		t.Error("nextOwner beyond the list claimed an owner")
	}
}

// TestWalkKeepsEachLinksHops: links passed on before (hops > 0) and fresh
// ones bound for the same owner travel in separate batches, each with its
// own count, so that a fresh link does not reach the hop limit early.
func TestWalkKeepsEachLinksHops(t *testing.T) {
	fr := newFakeRing(3, 2)
	f := newTestForwarder(fr, 1)
	ls := testLinks(60)
	want := map[string]int{}
	for i := range ls {
		if i%4 == 0 {
			ls[i].hops = 2
		}
		want[ls[i].url] = ls[i].hops
	}
	done, failed := f.walk(context.Background(), ls)
	if len(failed) != 0 || len(done) != len(ls) {
		t.Fatalf("done %d, failed %d of %d", len(done), len(failed), len(ls))
	}
	for u, h := range want {
		if got, ok := fr.hopsOf[u]; !ok || got != h {
			t.Errorf("%s delivered with hops %d (delivered %v), want %d", u, got, ok, h)
		}
	}

	// A recipient that is down: every part of its run comes back failed.
	fr2 := newFakeRing(3, 2)
	fr2.down["peer1"] = true
	f2 := newTestForwarder(fr2, 1)
	done, failed = f2.walk(context.Background(), ls)
	if len(done)+len(failed) != len(ls) {
		t.Fatalf("done %d + failed %d, want %d links accounted for", len(done), len(failed), len(ls))
	}
	for _, l := range failed {
		if fr2.nodes[fr2.ownerIndex(l.key)].Peer != "peer1" {
			t.Errorf("%s failed, but its owner %s is up", l.url, fr2.nodes[fr2.ownerIndex(l.key)].Peer)
		}
	}
}

// TestForwarderSendsToCloserOwner: links that carry a closer owner go
// straight to it, with no lookup; when it cannot be reached they are
// walked to their owners at the next flush.
func TestForwarderSendsToCloserOwner(t *testing.T) {
	ctx := context.Background()
	fr := newFakeRing(3, 2)
	f := newTestForwarder(fr, 1)
	ls := testLinks(5)
	var urls []string
	for _, l := range ls {
		urls = append(urls, l.url)
	}
	via := fr.nodes[3]
	if err := f.enqueue(urls, 2, &via); err != nil {
		t.Fatal(err)
	}
	f.flush(ctx)
	if got := fr.got[via.ID]; len(got) != len(urls) || fr.lookups != 0 {
		t.Fatalf("sent %d of %d links to the closer owner, %d lookups", len(got), len(urls), fr.lookups)
	}
	for _, u := range urls {
		if fr.hopsOf[u] != 2 {
			t.Errorf("%s arrived with hops %d, want 2", u, fr.hopsOf[u])
		}
	}
	if st := f.Stats(); st.Direct != int64(len(urls)) || st.Pending != 0 {
		t.Fatalf("stats after a direct delivery: %+v", st)
	}

	// The closer owner is down: the links stay, and the next flush walks
	// them to their owners.
	fr2 := newFakeRing(3, 2)
	f2 := newTestForwarder(fr2, 1)
	down := fr2.nodes[0]
	fr2.down[down.Peer] = true
	if err := f2.enqueue(urls, 1, &down); err != nil {
		t.Fatal(err)
	}
	f2.flush(ctx)
	if st := f2.Stats(); st.Pending != len(urls) {
		t.Fatalf("after a failed direct delivery %d links wait, want %d", st.Pending, len(urls))
	}
	delete(fr2.down, down.Peer)
	f2.flush(ctx)
	for _, l := range ls {
		owner := fr2.nodes[fr2.ownerIndex(l.key)]
		if !slices.Contains(fr2.got[owner.ID], l.url) {
			t.Errorf("%s not walked to its owner %s after the closer owner failed", l.url, owner)
		}
	}
}

// TestForwarderWalksAtOnceWhenCrawlerIdle: links from the local crawler
// start a walk at once while it has nothing queued, and wait for the
// buffer threshold or the timer otherwise; links passed on by other nodes
// never do.
func TestForwarderWalksAtOnceWhenCrawlerIdle(t *testing.T) {
	fr := newFakeRing(2, 2)
	var idle atomic.Bool
	f, err := New(Config{Ring: fr, Deliver: fr.deliver, PerVnode: 1000, Every: time.Hour,
		LocalPeer: "peer0", Idle: idle.Load})
	if err != nil {
		t.Fatal(err)
	}
	ls := testLinks(30)
	if err := f.Forward(context.Background(), urls(ls[:10])); err != nil {
		t.Fatal(err)
	}
	if len(f.kick) != 0 {
		t.Fatal("a walk was started for 10 links with the crawler busy")
	}
	idle.Store(true)
	if err := f.enqueue(urls(ls[10:20]), 1, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.kick) != 0 {
		t.Fatal("links passed on by another node started a walk because the local crawler is idle")
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	if err := f.Forward(context.Background(), urls(ls[20:])); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the links walked before the hour-long timer", 10*time.Second, func() error {
		if st := f.Stats(); st.Sent+st.Local < int64(len(ls)) {
			return fmt.Errorf("idle crawler: %+v", st)
		}
		return nil
	})
}

// TestSendDirectReplicaMode: links sent straight to a closer owner reach
// its replicas too, as walked links do.
func TestSendDirectReplicaMode(t *testing.T) {
	fr := newFakeRing(5, 2)
	f := newTestForwarder(fr, 3)
	owner := 4
	var urls []string
	for _, l := range testLinks(400) {
		if fr.ownerIndex(l.key) == owner {
			urls = append(urls, l.url)
		}
	}
	if len(urls) == 0 {
		t.Fatal("no test link owned by the chosen virtual server")
	}
	via := fr.nodes[owner]
	if err := f.enqueue(urls, 1, &via); err != nil {
		t.Fatal(err)
	}
	f.flush(context.Background())
	replicas := fr.replicaPeers(owner, 3)
	if len(replicas) != 2 {
		t.Fatalf("replica peers %v, want 2", replicas)
	}
	for _, p := range replicas {
		for _, u := range urls {
			if !slices.Contains(fr.replicaOf[p], u) {
				t.Fatalf("%s sent to its closer owner but missing on replica %s", u, p)
			}
		}
	}
}

// TestPickSuccessors: a recipient answers a walk with all of its first
// successors, none, or just the owner of the walk's next key.
func TestPickSuccessors(t *testing.T) {
	fr := newFakeRing(3, 2) // 6 virtual servers
	self := fr.nodes[0]
	succs := fr.nodes[1:5]
	if got := PickSuccessors(self.ID, succs, WantAll, id.ID{}); len(got) != ReplySuccessors {
		t.Fatalf("WantAll: %d successors", len(got))
	}
	if got := PickSuccessors(self.ID, succs, WantNone, fr.nodes[2].ID); got != nil {
		t.Fatalf("WantNone: %v", got)
	}
	for i := 1; i <= 4; i++ {
		// A key just past node i-1 is owned by node i.
		key := fr.nodes[i-1].ID.AddPow2(0)
		got := PickSuccessors(self.ID, succs, WantNext, key)
		if len(got) != 1 || got[0].ID != fr.nodes[i].ID {
			t.Fatalf("WantNext for a key owned by successor %d: %v", i, got)
		}
	}
	// The owner of a key past the list's reach is not in it.
	if got := PickSuccessors(self.ID, succs, WantNext, fr.nodes[4].ID.AddPow2(0)); got != nil {
		t.Fatalf("WantNext beyond the list: %v", got)
	}
	// WantNext searches the whole list, past the first ReplySuccessors.
	long := fr.nodes[1:6]
	if got := PickSuccessors(self.ID, long, WantNext, fr.nodes[4].ID.AddPow2(0)); len(got) != 1 || got[0].ID != fr.nodes[5].ID {
		t.Fatalf("WantNext for the fifth successor: %v", got)
	}
}

// TestWalkAsksOnlyForTheNextOwner: outside replica mode a walk asks each
// recipient only for the owner of its next key (none at the end), and
// still needs one lookup for a dense walk; in replica mode it asks for the
// successor list the replicas are chosen from.
func TestWalkAsksOnlyForTheNextOwner(t *testing.T) {
	fr := newFakeRing(8, 4)
	f := newTestForwarder(fr, 1)
	links := testLinks(2000)
	if done, failed := f.walk(context.Background(), links); len(failed) != 0 || len(done) != len(links) {
		t.Fatalf("done %d, failed %d", len(done), len(failed))
	}
	if fr.lookups != 1 {
		t.Fatalf("%d lookups, want 1", fr.lookups)
	}
	for i, w := range fr.wants {
		last := i == len(fr.wants)-1
		if (last && w != WantNone) || (!last && w != WantNext) {
			t.Fatalf("delivery %d of %d asked for %d", i, len(fr.wants), w)
		}
	}
	fr2 := newFakeRing(5, 2)
	f2 := newTestForwarder(fr2, 3)
	f2.walk(context.Background(), testLinks(300))
	for _, w := range fr2.wants[:1] {
		if w != WantAll {
			t.Fatalf("replica mode: a primary delivery asked for %d, want all", w)
		}
	}
}

// TestWalkReplicaModeMixedHops: in replica mode a run split by hop count
// asks for the owner's successor list in every batch, so the links of
// each batch reach the replicas whichever batch comes last.
func TestWalkReplicaModeMixedHops(t *testing.T) {
	fr := newFakeRing(5, 2)
	f := newTestForwarder(fr, 3)
	links := testLinks(300)
	for i := range links {
		links[i].hops = i % 2
	}
	if _, failed := f.walk(context.Background(), links); len(failed) != 0 {
		t.Fatalf("%d failed", len(failed))
	}
	for i, w := range fr.wants {
		if w != WantAll {
			t.Fatalf("primary delivery %d asked for %d, want the successor list", i, w)
		}
	}
	for _, l := range links {
		for _, p := range fr.replicaPeers(fr.ownerIndex(l.key), 3) {
			if !slices.Contains(fr.replicaOf[p], l.url) {
				t.Fatalf("%s (hops %d): replica missing on %s", l.url, l.hops, p)
			}
		}
	}
}

// TestWalkLocalOwnersOneBatchPerNode: when the ring's tables know every
// owner (a small ring), a walk spends no lookup and hands each real node
// one batch holding the links of all its virtual servers; a node that
// fails gets its links back for the next walk.
func TestWalkLocalOwnersOneBatchPerNode(t *testing.T) {
	fr := newFakeRing(4, 4)
	fr.localAnswers = true
	fr.down["peer2"] = true
	f := newTestForwarder(fr, 1)
	links := testLinks(2000)
	done, failed := f.walk(context.Background(), links)
	if fr.lookups != 0 {
		t.Fatalf("%d lookups, want 0", fr.lookups)
	}
	if len(done)+len(failed) != len(links) {
		t.Fatalf("done %d + failed %d != %d", len(done), len(failed), len(links))
	}
	peerOf := map[id.ID]string{}
	for _, n := range fr.nodes {
		peerOf[n.ID] = n.Peer
	}
	got := map[string]string{} // URL -> peer it was delivered to
	for vs, us := range fr.got {
		for _, u := range us {
			got[u] = peerOf[vs]
		}
	}
	for _, l := range links {
		owner := fr.nodes[fr.ownerIndex(l.key)]
		switch {
		case owner.Peer == "peer2":
			if !slices.ContainsFunc(failed, func(x pendingLink) bool { return x.url == l.url }) {
				t.Fatalf("%s, owned by the node that is down, not returned as failed", l.url)
			}
		case got[l.url] != owner.Peer:
			t.Fatalf("%s delivered to %q, its owner is on %s", l.url, got[l.url], owner.Peer)
		}
	}
	if len(fr.wants) != 3 {
		t.Fatalf("%d batches for 3 live nodes, want one each", len(fr.wants))
	}
}
