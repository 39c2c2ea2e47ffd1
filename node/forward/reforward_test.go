package forward

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// pagesCrawler is a recCrawler whose pages link to links.
type pagesCrawler struct {
	recCrawler
	links, reqs []string
	mu          sync.Mutex
	calls       int
}

func (c *pagesCrawler) LinksInto(_ context.Context, in func(string) bool) (links, reqs []string, err error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	for _, l := range c.links {
		if in(l) {
			links = append(links, l)
		}
	}
	for _, l := range c.reqs {
		if in(l) {
			reqs = append(reqs, l)
		}
	}
	return links, reqs, nil
}

// ringOf answers Successors with a fixed list.
type ringOf struct {
	stubRing
	nodes []ring.Node
}

func (r ringOf) Successors(context.Context, id.ID, int) ([]ring.Node, error) { return r.nodes, nil }

// ownerRing answers Lookup with owner, and with later from its
// learnAfter+1th lookup on if learnAfter > 0 (the ring learns of a
// take-over late).
type ownerRing struct {
	stubRing
	owner, later ring.Node
	learnAfter   int
	mu           sync.Mutex
	lookups      int
}

func (r *ownerRing) Lookup(context.Context, id.ID) (ring.Node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups++
	if r.learnAfter > 0 && r.lookups > r.learnAfter {
		return r.later, nil
	}
	return r.owner, nil
}

// TestReforwardAfterTakeOver: a node that took over a span tells the
// ring's other nodes over the links protocol; each re-forwards, once per
// span, the links of its pages that fall in the span, and only those,
// even though its forwarder delivered them earlier the same day.
func TestReforwardAfterTakeOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := p2ptest.Hosts(t, 2)
	ha, hb := hs[0], hs[1]
	in1, in2, out := "http://in.example/1", "http://in.example/2", "http://out.example/"
	// A span that holds in1 and in2 but not out: (k-1, max key of the two].
	k1, k2 := id.OfString(in1), id.OfString(in2)
	lo, hi := k1, k2
	if k2.Cmp(k1) < 0 {
		lo, hi = k2, k1
	}
	span := ring.Range{Start: prevKey(lo), End: hi, Known: true}
	if span.Contains(id.OfString(out)) {
		t.Fatal("the test's URLs fall in one span")
	}

	// b's pages link to in1, in2 (a requisite) and out; its forwarder
	// delivered them this morning.
	var mu sync.Mutex
	var got []string
	deliver := func(_ context.Context, _ ring.Node, bt Batch) ([]ring.Node, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, bt.URLs...)
		return nil, nil
	}
	fr := newFakeRing(1, 1)
	fb, err := New(Config{Ring: fr, Deliver: deliver, Day: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	cb := &pagesCrawler{links: []string{in1, out}, reqs: []string{in2}}
	// b's ring gives a the span: the owner of its first key is a's
	// virtual server at the span's end.
	heir := &ownerRing{stubRing: stubRing{fr}, owner: ring.Node{ID: hi, Contact: ring.Contact{Peer: ha.ID().String()}}}
	b := &Links{Ring: heir, Self: hb.ID().String(), Forwarder: fb, Crawler: cb}
	if err := fb.Forward(ctx, []string{in1, out}); err != nil {
		t.Fatal(err)
	}
	fb.Flush(ctx)
	if err := fb.Forward(ctx, []string{in1}); err != nil || fb.Stats().Pending != 0 {
		t.Fatalf("a link delivered today is queued again: %v, %+v", err, fb.Stats())
	}
	mu.Lock()
	got = nil
	mu.Unlock()
	k := kit.New(kit.Config{Host: hb, Gate: func(network.Stream) (ring.Node, error) {
		return ring.Node{Contact: ring.Contact{Peer: ha.ID().String()}}, nil
	}})
	k.MustHandle(b.Spec())
	done := make(chan struct{})
	go func() { defer close(done); b.RunReforward(ctx) }()
	defer func() { cancel(); <-done }()

	ca := &pagesCrawler{}
	fa, err := New(Config{Ring: fr, Deliver: deliver})
	if err != nil {
		t.Fatal(err)
	}
	bNode := ring.Node{Contact: ring.Contact{Peer: hb.ID().String(), Addr: "127.0.0.2:4001"}}
	a := &Links{Ring: ringOf{stubRing{fr}, []ring.Node{bNode, bNode}}, Self: ha.ID().String(), Forwarder: fa, Crawler: ca,
		Exchange: kit.OpenExchanger(p2ptest.Opener(ha))}
	for range 2 { // the second announcement of the same span does nothing more
		told, err := a.AnnounceTakeOver(ctx, span)
		if err != nil || told != 2 {
			t.Fatalf("announce: told %d, %v", told, err)
		}
		testwait.For(t, "the re-forward", 10*time.Second, func() error {
			if b.Reforwarding() {
				return errors.New("re-forward not done")
			}
			return nil
		})
		fb.Flush(ctx)
	}
	mu.Lock()
	slices.Sort(got)
	mu.Unlock()
	if !slices.Equal(got, []string{in1, in2}) || cb.calls != 1 {
		t.Fatalf("re-forwarded %q in %d passes, want %q once", got, cb.calls, []string{in1, in2})
	}
	if st := b.ReforwardStats(); st.Spans != 1 || st.Links != 2 || a.ReforwardStats().Announced != 2 {
		t.Fatalf("stats: b %+v, a %+v", st, a.ReforwardStats())
	}
	// The announcing node queued the span for itself too (without a
	// RunReforward here, it waits).
	if !a.Reforwarding() {
		t.Fatal("the announcing node did not queue its own re-forward")
	}
}

// TestReforwardSpansPerPeer: a member that announces made-up take-overs
// gets at most maxSpansPerPeer of them re-forwarded a day; another
// member's and this node's own announcements still queue.
func TestReforwardSpansPerPeer(t *testing.T) {
	var l Links
	span := func(i int) Span { return Span{A: id.OfString(fmt.Sprint("a", i)), B: id.OfString(fmt.Sprint("b", i))} }
	for i := range maxSpansPerPeer + 5 {
		l.queueReforward("liar", span(i))
	}
	if got := len(l.rf.queue); got != maxSpansPerPeer {
		t.Fatalf("one member's %d announcements queued %d spans, want %d", maxSpansPerPeer+5, got, maxSpansPerPeer)
	}
	if got := l.ReforwardStats().Dropped; got != 5 {
		t.Errorf("dropped %d, want 5", got)
	}
	l.queueReforward("honest", span(1000))
	l.queueReforward("", span(1001))
	if got := len(l.rf.queue); got != maxSpansPerPeer+2 {
		t.Errorf("after another member's and this node's own: %d spans, want %d", got, maxSpansPerPeer+2)
	}
}

// TestReforwardVerifiesAnnouncer: a span another member announces is
// re-forwarded only once this node's ring gives the announcer all of it.
// A span the ring gives another member is refused after maxVerifyTries
// checks; one whose take-over the ring learns late (the second check) is
// re-forwarded; a span reaching past the announcer's server is refused.
func TestReforwardVerifiesAnnouncer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := id.OfString("a"), id.OfString("b")
	if b.Cmp(a) < 0 {
		a, b = b, a
	}
	link := "http://x.example/"
	for _, c := range []struct {
		name        string
		owner       ring.Node
		learnAfter  int // lookups before the ring gives the liar the span (0: never)
		want        bool
		wantLookups int
	}{
		{"owned", ring.Node{ID: b, Contact: ring.Contact{Peer: "heir"}}, 0, true, 1},
		{"another member's", ring.Node{ID: b, Contact: ring.Contact{Peer: "other"}}, 0, false, maxVerifyTries},
		{"learnt late", ring.Node{ID: b, Contact: ring.Contact{Peer: "other"}}, 1, true, 2},
		{"past the heir's server", ring.Node{ID: a.AddPow2(0), Contact: ring.Contact{Peer: "heir"}}, 0, false, maxVerifyTries},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := &pagesCrawler{links: []string{link}}
			fr := newFakeRing(1, 1)
			f, err := New(Config{Ring: fr, Deliver: func(context.Context, ring.Node, Batch) ([]ring.Node, error) { return nil, nil }})
			if err != nil {
				t.Fatal(err)
			}
			rg := &ownerRing{stubRing: stubRing{fr}, owner: c.owner, learnAfter: c.learnAfter,
				later: ring.Node{ID: b, Contact: ring.Contact{Peer: "heir"}}}
			l := &Links{Ring: rg, Self: "me", Forwarder: f, Crawler: cr, verifyRetry: time.Millisecond}
			sp := Span{A: a, B: b}
			l.queueReforward("heir", sp)
			done := make(chan struct{})
			ctx, stop := context.WithCancel(ctx)
			go func() { defer close(done); l.RunReforward(ctx) }()
			testwait.For(t, "the span re-forwarded or refused", 20*time.Second, func() error {
				if st := l.ReforwardStats(); st.Spans+st.Refused == 0 || l.Reforwarding() {
					return fmt.Errorf("%+v", st)
				}
				return nil
			})
			stop()
			<-done
			st := l.ReforwardStats()
			if got := st.Spans == 1; got != c.want || st.Refused == 1 == c.want || rg.lookups != c.wantLookups {
				t.Errorf("stats %+v after %d lookups; want re-forwarded %v after %d", st, rg.lookups, c.want, c.wantLookups)
			}
			if cr.calls == 1 != c.want {
				t.Errorf("%d passes over the crawl states; want re-forwarded %v", cr.calls, c.want)
			}
		})
	}
}
