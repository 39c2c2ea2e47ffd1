package forward

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// stubRing knows no closer owner and no local virtual server.
type stubRing struct{ *fakeRing }

func (stubRing) SuccessorsOf(int) (ring.Node, []ring.Node, bool) { return ring.Node{}, nil, false }
func (stubRing) CloserOwner(id.ID) (ring.Node, bool)             { return ring.Node{}, false }
func (s stubRing) Successors(ctx context.Context, k id.ID, n int) ([]ring.Node, error) {
	o, _ := s.Lookup(ctx, k)
	return []ring.Node{o}, nil
}

// recCrawler records what it is handed.
type recCrawler struct {
	mu                    sync.Mutex
	added, reqs, remember []string
}

func (c *recCrawler) Add(_ context.Context, urls []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.added = append(c.added, urls...)
	return nil
}

func (c *recCrawler) AddRequisites(_ context.Context, urls []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, urls...)
	return nil
}

func (c *recCrawler) Remember(_ context.Context, urls []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remember = append(c.remember, urls...)
	return nil
}

func newTestLinks(t *testing.T, self string) (*Links, *recCrawler) {
	t.Helper()
	fr := stubRing{newFakeRing(1, 1)}
	l := &Links{Ring: fr, Self: self, LinkReplicas: 1, Replicas: 3,
		Owns: func(u string) bool { return strings.Contains(u, "mine") }}
	f, err := New(Config{Ring: fr, Deliver: l.Deliver})
	if err != nil {
		t.Fatal(err)
	}
	c := &recCrawler{}
	l.Forwarder, l.Crawler = f, c
	return l, c
}

// TestReceive: owned links are queued, others passed on, a link passed on
// MaxHops times is queued here anyway, and a non-canonical one dropped.
func TestReceive(t *testing.T) {
	ctx := context.Background()
	l, c := newTestLinks(t, "me")
	if err := l.Receive(ctx, []string{"http://mine.example/", "http://other.example/", "HTTP://Upper.example/"}, 0, false); err != nil {
		t.Fatal(err)
	}
	if len(c.added) != 1 || c.added[0] != "http://mine.example/" {
		t.Fatalf("queued %q", c.added)
	}
	if st := l.Forwarder.Stats(); st.Pending != 1 {
		t.Fatalf("passed on %d links, want 1", st.Pending)
	}
	if err := l.Receive(ctx, []string{"http://far.example/"}, MaxHops, false); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.BadLinks != 1 || st.OverHops != 1 || len(c.added) != 2 {
		t.Fatalf("stats %+v, queued %q", st, c.added)
	}
	if err := l.receiveKind(ctx, []string{"http://mine.example/s.css?v=1"}, 0, false, true); err != nil || len(c.reqs) != 1 {
		t.Fatalf("requisite: %v, %q", err, c.reqs)
	}
}

// TestLinksOverTheWire: a batch sent to another node is queued there and
// acknowledged; replica links to a node that takes none are refused as
// outside the sender's role.
func TestLinksOverTheWire(t *testing.T) {
	hs := p2ptest.Hosts(t, 2)
	ha, hb := hs[0], hs[1]
	a, _ := newTestLinks(t, ha.ID().String())
	b, cb := newTestLinks(t, hb.ID().String())
	a.Exchange = kit.OpenExchanger(p2ptest.Opener(ha))
	var refused []string
	k := kit.New(kit.Config{Host: hb,
		Gate: func(network.Stream) (ring.Node, error) {
			return ring.Node{Contact: ring.Contact{Peer: ha.ID().String()}}, nil
		},
		RefuseRole: func(_ ring.Node, proto string, _ error) { refused = append(refused, proto) },
	})
	k.MustHandle(b.Spec())

	to := ring.Node{Contact: ring.Contact{Peer: hb.ID().String(), Addr: "127.0.0.2:4001"}}
	urls := []string{"http://mine.example/a", "http://mine.example/b"}
	if _, err := a.Deliver(context.Background(), to, Batch{URLs: urls, Want: WantNone}); err != nil {
		t.Fatal(err)
	}
	if len(cb.added) != 2 || b.Stats().Received != 2 {
		t.Fatalf("recipient queued %q, counted %d", cb.added, b.Stats().Received)
	}
	_, err := a.Deliver(context.Background(), to, Batch{URLs: urls, Replica: true, Want: WantNone})
	if err == nil || !strings.Contains(err.Error(), "outside the sender's role") || len(refused) != 1 {
		t.Fatalf("replica links to a node without link replicas: %v; refusals %q", err, refused)
	}
}

// TestPassingOnBounded: links a node receives but does not own wait to be
// passed on up to MaxPassingOn; a batch past it is refused (ErrBusy)
// and leaves nothing behind; links it owns are still taken; delivering
// the waiting links makes room again.
func TestPassingOnBounded(t *testing.T) {
	ctx := context.Background()
	l, c := newTestLinks(t, "me")
	delivered := false
	l.Forwarder.cfg.Deliver = func(_ context.Context, _ ring.Node, b Batch) ([]ring.Node, error) {
		if !delivered {
			return nil, errors.New("owner unreachable")
		}
		return nil, nil
	}
	urls := make([]string, MaxPassingOn)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://other.example/%d", i)
	}
	if err := l.Receive(ctx, urls, 1, false); err != nil {
		t.Fatal(err)
	}
	if n := l.Forwarder.PassingOn(); n != MaxPassingOn {
		t.Fatalf("%d waiting to be passed on, want %d", n, MaxPassingOn)
	}
	l.Forwarder.Flush(ctx) // fails: all put back, still counted
	if n := l.Forwarder.PassingOn(); n != MaxPassingOn {
		t.Fatalf("%d after a failed walk, want %d", n, MaxPassingOn)
	}
	err := l.Receive(ctx, []string{"http://other.example/more", "http://mine.example/x"}, 1, false)
	if !errors.Is(err, ErrBusy) || l.Stats().PassOnRefused != 1 {
		t.Fatalf("a batch past the bound: %v (refused %d), want ErrBusy", err, l.Stats().PassOnRefused)
	}
	if st := l.Forwarder.Stats(); st.Pending != MaxPassingOn || len(c.added) != 0 {
		t.Fatalf("the refused batch left %d pending, %d queued", st.Pending-MaxPassingOn, len(c.added))
	}
	if err := l.Receive(ctx, []string{"http://mine.example/x"}, 1, false); err != nil || len(c.added) != 1 {
		t.Fatalf("an owned link while others wait: %v, queued %q", err, c.added)
	}
	delivered = true
	l.Forwarder.Flush(ctx)
	if n := l.Forwarder.PassingOn(); n != 0 {
		t.Fatalf("%d still counted after delivery", n)
	}
	if err := l.Receive(ctx, []string{"http://other.example/more"}, 1, false); err != nil {
		t.Fatalf("after delivery: %v", err)
	}
}

// TestOverHopAllowance: a member that says its links were passed on
// MaxHops times has this node queue, though it does not own them, at
// most MaxOverHopsPerDay of them; the rest are dropped and counted, and
// owned links of the same batches are queued.
func TestOverHopAllowance(t *testing.T) {
	hs := p2ptest.Hosts(t, 2)
	ha, hb := hs[0], hs[1]
	a, _ := newTestLinks(t, ha.ID().String())
	b, cb := newTestLinks(t, hb.ID().String())
	a.Exchange = kit.OpenExchanger(p2ptest.Opener(ha))
	k := kit.New(kit.Config{Host: hb, Gate: func(network.Stream) (ring.Node, error) {
		return ring.Node{Contact: ring.Contact{Peer: ha.ID().String()}}, nil
	}})
	k.MustHandle(b.Spec())
	to := ring.Node{Contact: ring.Contact{Peer: hb.ID().String(), Addr: "127.0.0.2:4001"}}
	send := func(urls []string) {
		t.Helper()
		if _, err := a.Deliver(context.Background(), to, Batch{URLs: urls, Hops: MaxHops, Want: WantNone}); err != nil {
			t.Fatal(err)
		}
	}
	var far []string
	for i := range MaxOverHopsPerDay + 5 {
		far = append(far, fmt.Sprintf("http://far.example/%d", i))
	}
	send(far[:MaxOverHopsPerDay-1])
	send(append(far[MaxOverHopsPerDay-1:], "http://mine.example/owned"))
	if got, want := len(cb.added), MaxOverHopsPerDay+1; got != want {
		t.Fatalf("queued %d links, want %d (the allowance and the owned one)", got, want)
	}
	if st := b.Stats(); st.OverHopDropped != 5 || st.OverHops != MaxOverHopsPerDay {
		t.Fatalf("stats %+v, want 5 dropped and %d over-hop links queued", st, MaxOverHopsPerDay)
	}
}
