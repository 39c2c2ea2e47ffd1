package claim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// fakeRing is a node's ring view: its virtual servers, each with a
// predecessor.
type fakeRing struct {
	vnodes []ring.Node
	preds  map[id.ID]*ring.Node
}

func (f *fakeRing) Vnodes() []ring.Node { return f.vnodes }

func (f *fakeRing) Predecessor(v id.ID) (ring.Node, bool) {
	if p := f.preds[v]; p != nil {
		return *p, true
	}
	return ring.Node{}, false
}

// byRing sorts ns clockwise by their virtual servers' ids.
func byRing(ns []*testNode) {
	slices.SortFunc(ns, func(a, b *testNode) int { return a.v.ID.Cmp(b.v.ID) })
}

// net carries claims between test nodes by function calls.
type net struct {
	nodes  map[string]*Claims
	dead   map[string]bool
	fail   map[string]int // replies to drop per answering peer
	refuse map[string]int // claims to refuse (ErrRefused) per answering peer
	calls  int
}

func (n *net) Claim(ctx context.Context, to ring.Node, q Request) (Reply, error) {
	n.calls++
	c := n.nodes[to.Peer]
	if c == nil || n.dead[to.Peer] {
		return Reply{}, fmt.Errorf("%s is gone", to.Peer)
	}
	if n.fail[to.Peer] > 0 {
		n.fail[to.Peer]--
		return Reply{}, errors.New("timeout")
	}
	if n.refuse[to.Peer] > 0 {
		n.refuse[to.Peer]--
		return Reply{}, fmt.Errorf("stream reset by the trust gate: %w", ErrRefused)
	}
	return c.Answer(ctx, ring.Node{Contact: q.Vnode.Contact}, q, q.Day)
}

func (n *net) Alive(_ context.Context, v ring.Node) bool {
	return n.nodes[v.Peer] != nil && !n.dead[v.Peer]
}

type testNode struct {
	v     ring.Node
	ring  *fakeRing
	c     *Claims
	waits int
}

func vnode(i int) ring.Node {
	c := ring.Contact{Peer: fmt.Sprintf("peer-%d", i), Addr: fmt.Sprintf("10.0.0.%d:4001", i)}
	return ring.Node{ID: ring.VirtualID(c.Addr, 0), Contact: c, Index: 0}
}

func newNet(count int) (*net, []*testNode) {
	nw := &net{nodes: map[string]*Claims{}, dead: map[string]bool{}, fail: map[string]int{}, refuse: map[string]int{}}
	var ns []*testNode
	for i := range count {
		v := vnode(i + 1)
		tn := &testNode{v: v, ring: &fakeRing{vnodes: []ring.Node{v}, preds: map[id.ID]*ring.Node{}}}
		tn.c = New(Config{Peer: v.Peer, Ring: tn.ring, Transport: nw,
			Wait: func(context.Context, int) error { tn.waits++; return nil }})
		nw.nodes[v.Peer] = tn.c
		ns = append(ns, tn)
	}
	return nw, ns
}

// urlIn returns a URL whose key lies in (a, b).
func urlIn(t *testing.T, a, b id.ID) (string, id.ID) {
	t.Helper()
	for i := range 100000 {
		u := fmt.Sprintf("http://site.example/%d", i)
		if k := id.OfString(u); id.InOpen(k, a, b) {
			return u, k
		}
	}
	t.Fatal("no URL in range")
	return "", id.ID{}
}

// formerAndJoiner returns a network of two nodes, a former owner and a
// joiner (not yet joined), and a URL and its key in the joiner's range.
func formerAndJoiner(t *testing.T) (*net, *testNode, *testNode, string, id.ID) {
	t.Helper()
	nw, ns := newNet(2)
	old, joiner := ns[0], ns[1]
	u, k := urlIn(t, old.v.ID, joiner.v.ID)
	return nw, old, joiner, u, k
}

// joined makes joiner's vnode the taker of a range from former's, today.
func joined(joiner, former *testNode, day int64) {
	joiner.c.Took(joiner.v.ID, former.v, day)
}

const day = 7

func TestFormerOwnerFetchedFirst(t *testing.T) {
	ctx := context.Background()
	_, old, joiner, u, k := formerAndJoiner(t)
	if got := old.c.ToFetch(ctx, u, k, old.v, day); got != Fetch {
		t.Fatalf("owner without a former owner: %v, want Fetch", got)
	}
	joined(joiner, old, day)
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day); got != Drop {
		t.Fatalf("joiner claiming a URL its former owner fetched: %v, want Drop", got)
	}
	if !joiner.c.Dropped(k, day) {
		t.Error("Dropped: the URL is not the joiner's today")
	}
	if st := joiner.c.Stats(); st.Sent != 1 || st.Taken != 1 {
		t.Errorf("joiner stats %+v, want 1 sent, 1 taken", st)
	}
}

func TestClaimGrantedOnce(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(3)
	old, a, b := ns[0], ns[1], ns[2]
	// Two nodes both believe they took the same range (twins at one IP
	// look the same): the first claim wins, the second finds it taken.
	b.v.ID = a.v.ID
	u, k := urlIn(t, old.v.ID, a.v.ID)
	joined(a, old, day)
	joined(b, old, day)
	if got := a.c.ToFetch(ctx, u, k, a.v, day); got != Fetch {
		t.Fatalf("first claimer: %v, want Fetch", got)
	}
	if got := a.c.ToFetch(ctx, u, k, a.v, day); got != Fetch {
		t.Fatalf("first claimer again: %v, want Fetch (its own)", got)
	}
	if got := old.c.ToFetch(ctx, u, k, old.v, day); got != Drop {
		t.Fatalf("former owner after granting: %v, want Drop", got)
	}
	if st := old.c.Stats(); st.Away != 1 {
		t.Errorf("former owner granted %d claims, want 1", st.Away)
	}
}

func TestClaimFollowsChain(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(3)
	// Clockwise last < mid < first: first held the range, mid joined in
	// front of it, then last in front of mid. The key lies before last.
	byRing(ns)
	last, mid, first := ns[0], ns[1], ns[2]
	u, k := urlIn(t, first.v.ID, last.v.ID)
	first.c.ToFetch(ctx, u, k, first.v, day)
	joined(mid, first, day)
	joined(last, mid, day)
	if got := last.c.ToFetch(ctx, u, k, last.v, day); got != Drop {
		t.Fatalf("claim along the chain: %v, want Drop", got)
	}
	if st := mid.c.Stats(); st.Sent != 1 {
		t.Errorf("mid asked its former owner %d times, want 1", st.Sent)
	}
}

// TestClaimPastMaxHops: a range moved six times today, the first holder
// fetched the URL. The chain of former owners is cut at MaxHops (4); the
// claimer asks the rest of it (Reply.Next) and drops the URL, and the
// owners between granted it: exactly one fetch.
func TestClaimPastMaxHops(t *testing.T) {
	ctx := context.Background()
	nw, ns := newNet(7)
	// Clockwise ns[0] < … < ns[6]: ns[6] held the range and each ns[i]
	// took it from ns[i+1]. The key lies before ns[0].
	byRing(ns)
	first, claimer := ns[6], ns[0]
	u, k := urlIn(t, first.v.ID, claimer.v.ID)
	if got := first.c.ToFetch(ctx, u, k, first.v, day); got != Fetch {
		t.Fatalf("first holder: %v, want Fetch", got)
	}
	for i := range 6 {
		joined(ns[i], ns[i+1], day)
	}
	if got := claimer.c.ToFetch(ctx, u, k, claimer.v, day); got != Drop {
		t.Fatalf("claim along a chain of 6 former owners: %v, want Drop", got)
	}
	if nw.calls != 6 {
		t.Errorf("%d claims sent, want 6 (5 along the first chain, 1 past its cut)", nw.calls)
	}
	if st := ns[5].c.Stats(); st.Cut != 1 {
		t.Errorf("the fifth former owner cut %d chains, want 1", st.Cut)
	}
	for _, n := range ns[1:6] {
		if got := n.c.ToFetch(ctx, u, k, n.v, day); got != Drop {
			t.Errorf("former owner %s after the claim: %v, want Drop", n.v.Peer, got)
		}
	}
}

func TestClaimElsewhere(t *testing.T) {
	ctx := context.Background()
	_, old, joiner, u, k := formerAndJoiner(t)
	// By the former owner's view one of its virtual servers lies between
	// the key and the joiner: the joiner's view is behind.
	extra := ring.Node{ID: k, Contact: old.v.Contact} // at the key itself
	old.ring.vnodes = append(old.ring.vnodes, extra)
	joined(joiner, old, day)
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day); got != PassOn {
		t.Fatalf("claim answered elsewhere: %v, want PassOn", got)
	}
}

func TestUnansweredClaim(t *testing.T) {
	ctx := context.Background()
	nw, old, joiner, u, k := formerAndJoiner(t)
	joined(joiner, old, day)
	nw.fail[old.v.Peer] = 1 // one lost reply: the retry gets through
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day); got != Fetch || joiner.waits != 1 {
		t.Fatalf("after one lost reply: %v with %d waits, want Fetch after 1", got, joiner.waits)
	}
	if got := old.c.ToFetch(ctx, u, k, old.v, day); got != Drop {
		t.Fatalf("former owner after the retried grant: %v, want Drop", got)
	}
	u2, k2 := urlIn(t, k, joiner.v.ID)
	nw.dead[old.v.Peer] = true
	if got := joiner.c.ToFetch(ctx, u2, k2, joiner.v, day); got != Fetch {
		t.Fatalf("former owner gone: %v, want Fetch (rather than lost)", got)
	}
	if st := joiner.c.Stats(); st.Unanswered != 1 {
		t.Errorf("unanswered %d, want 1", st.Unanswered)
	}
}

func TestReleaseOnlyGoneClaimers(t *testing.T) {
	ctx := context.Background()
	nw, ns := newNet(3)
	old, live, gone := ns[0], ns[1], ns[2]
	u1, k1 := urlIn(t, old.v.ID, live.v.ID)
	u2, k2 := urlIn(t, old.v.ID, gone.v.ID)
	joined(live, old, day)
	joined(gone, old, day)
	live.c.ToFetch(ctx, u1, k1, live.v, day)
	gone.c.ToFetch(ctx, u2, k2, gone.v, day)
	nw.dead[gone.v.Peer] = true
	whole := ring.Range{Start: old.v.ID, End: old.v.ID, Known: true} // the whole ring
	if n := old.c.Release(ctx, whole, day); n != 1 {
		t.Fatalf("released %d claims, want 1 (the gone claimer's)", n)
	}
	if !old.c.Dropped(k1, day) {
		t.Error("a live claimer's URL was released")
	}
	if old.c.Dropped(k2, day) {
		t.Error("a gone claimer's URL is still claimed away")
	}
}

func TestHandover(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(2)
	leaver, heir := ns[0], ns[1]
	u, k := urlIn(t, heir.v.ID, leaver.v.ID)
	leaver.c.ToFetch(ctx, u, k, leaver.v, day)
	r := ring.Range{Start: heir.v.ID, End: leaver.v.ID, Known: true}
	keys := leaver.c.Fetched(r, day)
	if len(keys) != 1 {
		t.Fatalf("handover of %d keys, want 1", len(keys))
	}
	h := Handover{Day: day, Vnode: leaver.v, Keys: keys}
	if err := heir.c.HandedOver(ring.Node{Contact: vnode(9).Contact}, h, day); !errors.Is(err, ErrRole) {
		t.Fatalf("handover from another peer: %v, want ErrRole", err)
	}
	if err := heir.c.HandedOver(ring.Node{Contact: leaver.v.Contact}, h, day); err != nil {
		t.Fatal(err)
	}
	if got := heir.c.ToFetch(ctx, u, k, heir.v, day); got != Drop {
		t.Fatalf("heir after the handover: %v, want Drop", got)
	}
	// A few handovers a virtual server a day (a node may stop more than
	// once): a member cannot fill the heir's memory by sending them
	// again and again.
	for i := 1; i < maxHandoversPerDay; i++ {
		if err := heir.c.HandedOver(ring.Node{Contact: leaver.v.Contact}, h, day); err != nil {
			t.Fatalf("handover %d of the day: %v", i+1, err)
		}
	}
	if err := heir.c.HandedOver(ring.Node{Contact: leaver.v.Contact}, h, day); !errors.Is(err, ErrRole) {
		t.Fatalf("handover %d of the day: %v, want ErrRole", maxHandoversPerDay+1, err)
	}
}

// TestHadBounded: the day's set of keys former owners fetched holds at
// most maxHad.
func TestHadBounded(t *testing.T) {
	_, ns := newNet(1)
	c := ns[0].c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	for i := range maxHad + 10 {
		c.markHadLocked(short(i))
	}
	if len(c.had) != maxHad {
		t.Fatalf("%d keys held, want %d", len(c.had), maxHad)
	}
}

func TestClaimRole(t *testing.T) {
	ctx := context.Background()
	_, old, joiner, u, _ := formerAndJoiner(t)
	for _, tc := range []struct {
		name  string
		from  ring.Contact
		vnode ring.Node
	}{
		{"someone else's virtual server", vnode(9).Contact, joiner.v},
		{"an id the sender cannot run", joiner.v.Contact, ring.Node{ID: id.OfString("free"), Contact: joiner.v.Contact}},
	} {
		_, err := old.c.Answer(ctx, ring.Node{Contact: tc.from}, Request{URL: u, Day: day, Vnode: tc.vnode}, day)
		if !errors.Is(err, ErrRole) {
			t.Errorf("%s: %v, want ErrRole", tc.name, err)
		}
	}
}

func TestNewDayForgets(t *testing.T) {
	ctx := context.Background()
	_, old, joiner, u, k := formerAndJoiner(t)
	old.c.ToFetch(ctx, u, k, old.v, day)
	joined(joiner, old, day)
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day+1); got != Fetch {
		t.Fatalf("the next day: %v, want Fetch (the range was taken the day before)", got)
	}
}

// TestChainThroughClaimersNode: the chain of former owners passes through
// another virtual server of the claimer's own node. B's b1 took the range
// from A, C's c took part of it from b1, then B's b2 took part of c's; A
// had fetched the URL. b2's claim goes to C, C asks b1 on B, B asks A.
func TestChainThroughClaimersNode(t *testing.T) {
	ctx := context.Background()
	nw, ns := newNet(3)
	a, b, c := ns[0], ns[1], ns[2]
	// Indexes for B such that, clockwise, b2 < c < b1 < a.
	b1, b2 := twoVnodes(t, b, func(x, y id.ID) bool {
		return id.InOpen(c.v.ID, y, x) && id.InOpen(x, c.v.ID, a.v.ID)
	})
	b.ring.vnodes = []ring.Node{b1, b2}
	u, k := urlIn(t, a.v.ID, b2.ID)
	if got := a.c.ToFetch(ctx, u, k, a.v, day); got != Fetch {
		t.Fatalf("founder: %v, want Fetch", got)
	}
	b.c.Took(b1.ID, a.v, day)
	c.c.Took(c.v.ID, b1, day)
	b.c.Took(b2.ID, c.v, day)
	if got := b.c.ToFetch(ctx, u, k, b2, day); got != Drop {
		t.Fatalf("claim along a chain through the claimer's node: %v, want Drop", got)
	}
	if nw.calls != 3 {
		t.Errorf("%d claims sent, want 3 (B→C, C→B, B→A)", nw.calls)
	}
}

// TestChainBackToOrigin: the chain of former owners comes back to the
// claimer's own node before any owner fetched the URL. B's b1 held the
// range, D's d took it from b1, then B's b2 took it from d. b2's claim
// goes to D, D asks b1 on B: B must not grant the URL to D (a grant
// would make b2 drop its own URL while D grants it to b2: nobody would
// fetch it). Exactly one fetch follows, b2's.
func TestChainBackToOrigin(t *testing.T) {
	ctx := context.Background()
	nw, ns := newNet(2)
	b, d := ns[0], ns[1]
	// Indexes for B such that, clockwise, b2 < d < b1.
	b1, b2 := twoVnodes(t, b, func(x, y id.ID) bool { return id.InOpen(d.v.ID, y, x) })
	b.ring.vnodes = []ring.Node{b1, b2}
	u, k := urlIn(t, b1.ID, b2.ID) // the key lies before b2
	d.c.Took(d.v.ID, b1, day)
	b.c.Took(b2.ID, d.v, day)
	if got := b.c.ToFetch(ctx, u, k, b2, day); got != Fetch {
		t.Fatalf("claim whose chain comes back to the claimer's node: %v, want Fetch", got)
	}
	if nw.calls != 2 {
		t.Errorf("%d claims sent, want 2 (B→D, D→B)", nw.calls)
	}
	if got := d.c.ToFetch(ctx, u, k, d.v, day); got != Drop {
		t.Errorf("the former owner after its grant: %v, want Drop", got)
	}
}

// TestMovedClaimerKeepsClaim: a claimer fetches a URL as soon as it is
// granted, so its claim holds while its node answers, whether or not it
// still runs the claiming virtual server (a move to another index): the
// former owner does not fetch the URL again, when it comes back to it nor
// when the range comes back. Only a node that no longer answers loses its
// claims (TestReleaseOnlyGoneClaimers).
func TestMovedClaimerKeepsClaim(t *testing.T) {
	ctx := context.Background()
	_, old, joiner, u, k := formerAndJoiner(t)
	joined(joiner, old, day)
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day); got != Fetch {
		t.Fatalf("joiner: %v, want Fetch", got)
	}
	if got := old.c.ToFetch(ctx, u, k, old.v, day); got != Drop {
		t.Fatalf("former owner, claimer moved: %v, want Drop (the claimer fetched it)", got)
	}
	whole := ring.Range{Start: joiner.v.ID, End: joiner.v.ID, Known: true}
	if n := old.c.Release(ctx, whole, day); n != 0 || !old.c.Dropped(k, day) {
		t.Fatalf("released %d claims of a moved claimer that answers, want 0", n)
	}
}

// TestChainLoopBetweenTwoNodes: B took the range from D today and D took
// it back from B, and O took it from B. O's claim goes to B, B asks D, D
// asks B again: the chain must not grant the URL back and forth between B
// and D, or O is told "taken" while B and D each believe the other has it
// and nobody fetches it.
func TestChainLoopBetweenTwoNodes(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(3)
	o, b, d := ns[0], ns[1], ns[2]
	u, k := urlIn(t, b.v.ID, o.v.ID) // no B virtual server between the key and O's
	b.c.Took(b.v.ID, d.v, day)
	d.c.Took(d.v.ID, b.v, day)
	o.c.Took(o.v.ID, b.v, day)
	if got := o.c.ToFetch(ctx, u, k, o.v, day); got != Fetch {
		t.Fatalf("claim whose chain loops between two former owners: %v, want Fetch", got)
	}
	if got := b.c.ToFetch(ctx, u, k, b.v, day); got != Drop {
		t.Errorf("B after granting: %v, want Drop", got)
	}
	if got := d.c.ToFetch(ctx, u, k, d.v, day); got != Drop {
		t.Errorf("D after granting: %v, want Drop", got)
	}
}

// twoVnodes returns two virtual servers of tn's node, at distinct
// indexes, whose ids x and y satisfy layout.
func twoVnodes(t *testing.T, tn *testNode, layout func(x, y id.ID) bool) (ring.Node, ring.Node) {
	t.Helper()
	for i := range 64 {
		for j := range 64 {
			x := ring.Node{ID: ring.VirtualID(tn.v.Addr, i), Contact: tn.v.Contact, Index: i}
			y := ring.Node{ID: ring.VirtualID(tn.v.Addr, j), Contact: tn.v.Contact, Index: j}
			if i != j && layout(x.ID, y.ID) {
				return x, y
			}
		}
	}
	t.Fatal("no index layout found")
	return ring.Node{}, ring.Node{}
}

// TestClaimAsksEveryFormerOfTheDay: a virtual server that took its range
// twice on one day (in a forming ring: a join, then a twin's move in
// front of it) asks both former owners, not only the last. Here the
// first fetched the URL, and the last and the one after it took the
// range from each other (a loop that never reaches the first).
func TestClaimAsksEveryFormerOfTheDay(t *testing.T) {
	ctx := context.Background()
	nw, ns := newNet(4)
	byRing(ns)
	claimer, mid, other, first := ns[0], ns[1], ns[2], ns[3]
	u, k := urlIn(t, first.v.ID, claimer.v.ID) // before every virtual server
	if got := first.c.ToFetch(ctx, u, k, first.v, day); got != Fetch {
		t.Fatalf("first holder: %v, want Fetch", got)
	}
	joined(mid, first, day)
	joined(mid, other, day) // took again, from another former owner
	joined(other, mid, day)
	joined(claimer, mid, day)
	if got := claimer.c.ToFetch(ctx, u, k, claimer.v, day); got != Drop {
		t.Fatalf("claim of a range taken twice today: %v, want Drop (the first former owner fetched it)", got)
	}
	if nw.calls > 8 {
		t.Errorf("%d claims sent, want at most 8", nw.calls)
	}
}

// TestTwinAlongTheChain: a former owner whose predecessor is a twin of
// the virtual server that asks it along a chain (another peer runs the
// same id, and the asking one is the twin that will move) answers by what
// it fetched and granted, not "taken": the claimer at the chain's start
// took the range from that twin, and the URL is its. The twin that stays
// then finds the URL granted.
func TestTwinAlongTheChain(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(4)
	three := ns[:3]
	byRing(three)
	claimer, twin, former, stays := three[0], three[1], three[2], ns[3]
	makeTwin(stays, twin, former)
	u, k := urlIn(t, former.v.ID, claimer.v.ID)
	joined(claimer, twin, day)
	joined(twin, former, day)
	joined(stays, former, day)
	if got := claimer.c.ToFetch(ctx, u, k, claimer.v, day); got != Fetch {
		t.Fatalf("claimer: %v, want Fetch (nobody fetched the URL)", got)
	}
	if got := stays.c.ToFetch(ctx, u, k, stays.v, day); got != Drop {
		t.Fatalf("the twin that stays: %v, want Drop (granted along the chain)", got)
	}
}

// TestClaimTwoFormersOneChain: a virtual server took its range first from
// old, then from newer, which had taken it from old as well. Nobody
// fetched the URL. The claim through newer reaches old, which grants it
// for the claimer; the claimer's own claim at old then finds it granted
// to itself, not taken, and fetches: one fetch, none lost.
func TestClaimTwoFormersOneChain(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(3)
	byRing(ns)
	claimer, newer, old := ns[0], ns[1], ns[2]
	u, k := urlIn(t, old.v.ID, claimer.v.ID)
	joined(newer, old, day)
	joined(claimer, old, day)
	joined(claimer, newer, day)
	if got := claimer.c.ToFetch(ctx, u, k, claimer.v, day); got != Fetch {
		t.Fatalf("claimer: %v, want Fetch (nobody fetched the URL)", got)
	}
	for _, n := range []*testNode{newer, old} {
		if got := n.c.ToFetch(ctx, u, k, n.v, day); got != Drop {
			t.Errorf("former owner %s after granting: %v, want Drop", n.v.Peer, got)
		}
	}
}

// TestRefusedClaimWaits: a former owner that refuses claims for a while
// (its trust gate cannot place the claimer yet) is asked again past
// Attempts, and its "taken" is heeded: the URL is not fetched twice.
func TestRefusedClaimWaits(t *testing.T) {
	ctx := context.Background()
	nw, old, joiner, u, k := formerAndJoiner(t)
	if got := old.c.ToFetch(ctx, u, k, old.v, day); got != Fetch {
		t.Fatalf("former owner: %v, want Fetch", got)
	}
	joined(joiner, old, day)
	nw.refuse[old.v.Peer] = 5
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day); got != Drop {
		t.Fatalf("claim refused 5 times, then answered: %v, want Drop", got)
	}
	if st := joiner.c.Stats(); st.Refused != 5 || st.Unanswered != 0 {
		t.Errorf("joiner stats %+v, want 5 refused, 0 unanswered", st)
	}
	// A former owner that never stops refusing costs the URL no more than
	// RefusedAttempts claims: it is fetched.
	u2, k2 := urlIn(t, old.v.ID, joiner.v.ID)
	for i := 0; u2 == u; i++ {
		u2 = fmt.Sprintf("http://site.example/refused/%d", i)
		if k2 = id.OfString(u2); !id.InOpen(k2, old.v.ID, joiner.v.ID) {
			u2 = u
		}
	}
	nw.refuse[old.v.Peer] = 1000
	nw.calls = 0
	if got := joiner.c.ToFetch(ctx, u2, k2, joiner.v, day); got != Fetch {
		t.Fatalf("claim refused for good: %v, want Fetch", got)
	}
	if nw.calls != 8 {
		t.Errorf("%d claims sent, want 8 (RefusedAttempts)", nw.calls)
	}
}

// TestRefusedAlongTheChain: a former owner along a chain that refuses
// the claim makes the one before it grant nothing (Reply.Retry); when it
// answers, its "taken" reaches the claimer.
func TestRefusedAlongTheChain(t *testing.T) {
	ctx := context.Background()
	nw, ns := newNet(3)
	byRing(ns)
	last, mid, first := ns[0], ns[1], ns[2]
	u, k := urlIn(t, first.v.ID, last.v.ID)
	first.c.ToFetch(ctx, u, k, first.v, day)
	joined(mid, first, day)
	joined(last, mid, day)
	nw.refuse[first.v.Peer] = 2
	if got := last.c.ToFetch(ctx, u, k, last.v, day); got != Drop {
		t.Fatalf("claim along a chain refused twice: %v, want Drop", got)
	}
	if st := mid.c.Stats(); st.Away != 0 {
		t.Errorf("mid granted %d claims, want 0", st.Away)
	}
	if st := last.c.Stats(); st.Refused != 2 {
		t.Errorf("claimer saw %d refusals, want 2", st.Refused)
	}
}

// TestTwinClaimsElsewhere: the twin that will move (another peer runs its
// id and is the former owner's predecessor) is told "elsewhere" and
// passes the URL on through the former owner, which grants nothing; the
// twin that stays then claims and fetches it.
func TestTwinClaimsElsewhere(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(3)
	two := ns[:2]
	byRing(two)
	moves, former, stays := two[0], two[1], ns[2]
	makeTwin(stays, moves, former)
	u, k := urlIn(t, former.v.ID, moves.v.ID)
	joined(moves, former, day)
	joined(stays, former, day)
	out, via := moves.c.ToFetchVia(ctx, u, k, moves.v, day)
	if out != PassOn || via.Peer != former.v.Peer {
		t.Fatalf("the twin that moves: %v via %q, want PassOn via the former owner", out, via.Peer)
	}
	if got := stays.c.ToFetch(ctx, u, k, stays.v, day); got != Fetch {
		t.Fatalf("the twin that stays: %v, want Fetch", got)
	}
	if got := former.c.ToFetch(ctx, u, k, former.v, day); got != Drop {
		t.Fatalf("the former owner after its grant: %v, want Drop", got)
	}
}

// TestTookFromOwnVirtualServer: a virtual server that joins in front of
// another of its node's own takes over that one's former owners of the
// day, and claims from them; one taken from an own virtual server that
// held its range all day records nothing.
func TestTookFromOwnVirtualServer(t *testing.T) {
	ctx := context.Background()
	_, ns := newNet(2)
	byRing(ns)
	joiner, first := ns[0], ns[1]
	// Another virtual server of the joiner's node, in front of joiner.v.
	moved := ring.Node{Contact: joiner.v.Contact}
	for i := 1; ; i++ {
		moved.ID, moved.Index = ring.VirtualID(joiner.v.Addr, i), i
		if id.InOpen(moved.ID, first.v.ID, joiner.v.ID) {
			break
		}
	}
	u, k := urlIn(t, first.v.ID, moved.ID)
	if got := first.c.ToFetch(ctx, u, k, first.v, day); got != Fetch {
		t.Fatalf("first holder: %v, want Fetch", got)
	}
	joined(joiner, first, day)
	joiner.c.Took(moved.ID, joiner.v, day)
	if got := joiner.c.ToFetch(ctx, u, k, moved, day); got != Drop {
		t.Fatalf("claim of a virtual server that took its range from its node's own: %v, want Drop", got)
	}
	other := ring.Node{ID: id.OfString("other"), Contact: first.v.Contact, Index: 6}
	first.c.Took(other.ID, first.v, day)
	first.c.mu.Lock()
	n := len(first.c.former[other.ID])
	first.c.mu.Unlock()
	if n != 0 {
		t.Errorf("former owners recorded from an own virtual server without any: %d", n)
	}
}

// makeTwin gives stays the virtual-server id of moves (another peer at
// the same IP, so the id checks out) and makes it former's predecessor:
// the successor kept stays, and moves is the twin that will move.
func makeTwin(stays, moves, former *testNode) {
	stays.v.ID, stays.v.Addr = moves.v.ID, moves.v.Addr
	stays.ring.vnodes = []ring.Node{stays.v}
	former.ring.preds = map[id.ID]*ring.Node{former.v.ID: &stays.v}
}
