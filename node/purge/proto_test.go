package purge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// testMember is one node of an in-memory network: a Book over a fake
// store, and an Exchanger serving Protocol on a mock libp2p host.
type testMember struct {
	signer identity.Signer
	store  *fakeStore
	book   *Book
	x      *Exchanger
	host   host.Host
}

func (m *testMember) contact() ring.Contact {
	return ring.Contact{Peer: m.host.ID().String(), Addr: m.host.ID().ShortString()}
}

// newTestMembers starts n members on one mock network; each trusts the
// first member's orders (it is their purge authority), and admits every
// stream unless member is false.
func newTestMembers(t *testing.T, n int, member bool) []*testMember {
	t.Helper()
	hs := p2ptest.Hosts(t, n)
	var ms []*testMember
	for i, h := range hs {
		m := &testMember{signer: newTestSigner(t), store: &fakeStore{}, host: h}
		var auth []string
		if i > 0 {
			auth = []string{ms[0].signer.Peer()}
		}
		x := NewExchanger()
		var err error
		m.book, err = Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "orders"), Self: m.signer.Peer(),
			Authorities: auth, Store: m.store, Verifier: identity.Verifier{}, Taken: func(string) { x.Spread() }})
		if err != nil {
			t.Fatal(err)
		}
		x.Book, x.Self, x.Open = m.book, h.ID().String(), p2ptest.Opener(h)
		k := kit.New(kit.Config{Host: h, Gate: func(network.Stream) (ring.Node, error) {
			if !member {
				return ring.Node{}, errors.New("not a member")
			}
			return ring.Node{}, nil
		}})
		m.x = x
		k.MustHandle(x.Spec())
		ms = append(ms, m)
	}
	for _, m := range ms {
		m.x.Neighbours = func() []ring.Contact {
			var cs []ring.Contact
			for _, o := range ms {
				cs = append(cs, o.contact(), o.contact()) // repeats are skipped
			}
			return cs
		}
	}
	return ms
}

// TestExchangeBothWays: an exchange hands the replica the orders it
// lacks and takes the replica's; afterwards both hold the same digest,
// and an exchange between nodes that agree moves no order.
func TestExchangeBothWays(t *testing.T) {
	ctx := context.Background()
	ms := newTestMembers(t, 3, true)
	a, b := ms[0], ms[1]
	victim := newTestSigner(t).Peer()
	o, err := NewOrder(a.signer, victim, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.book.Take(ctx, o); err != nil {
		t.Fatal(err)
	}
	digest, err := a.x.Exchange(ctx, b.contact())
	if err != nil || digest == "" {
		t.Fatalf("push: digest %q, %v", digest, err)
	}
	if _, d := b.book.List(); d != digest || b.store.times(victim) != 1 {
		t.Fatalf("replica holds digest %q (want %q), purged the victim %d times", d, digest, b.store.times(victim))
	}
	// The other way: c pulls the order from b.
	c := ms[2]
	if got, err := c.x.Exchange(ctx, b.contact()); err != nil || got != digest || c.store.times(victim) != 1 {
		t.Fatalf("pull: digest %q, %v; victim purged %d times", got, err, c.store.times(victim))
	}
	if got, err := c.x.Exchange(ctx, a.contact()); err != nil || got != digest || a.store.times(victim) != 1 {
		t.Fatalf("in agreement: digest %q, %v; victim purged %d times on a", got, err, a.store.times(victim))
	}
}

// TestExchangeRefusals: an order a replica does not trust leaves the two
// digests apart; a non-member's stream and an oversized request are
// refused.
func TestExchangeRefusals(t *testing.T) {
	ctx := context.Background()
	ms := newTestMembers(t, 2, true)
	a, b := ms[0], ms[1]
	o, err := NewOrder(b.signer, newTestSigner(t).Peer(), time.Now()) // b is no authority of a
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.book.Take(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got, err := b.x.Exchange(ctx, a.contact()); err != nil || got != "" {
		t.Fatalf("untrusted order: digest %q, %v; want no agreement", got, err)
	}
	if st := a.book.Stats(); st.Orders != 0 || st.Refused == 0 {
		t.Fatalf("a's stats %+v: want the order refused", st)
	}

	var rep Reply
	s, err := b.host.NewStream(ctx, a.host.ID(), Protocol)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteJSON(s, Request{Orders: make([]Order, MaxOrders+1)}); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	if err := wire.ReadJSON(bufio.NewReader(s), maxFrame, &rep); err != nil || rep.Error != fmt.Sprintf("node: %d purge orders in one request, at most %d", MaxOrders+1, MaxOrders) {
		t.Fatalf("oversized request: %+v, %v", rep, err)
	}

	out := newTestMembers(t, 2, false)
	if _, err := out[0].x.Exchange(ctx, out[1].contact()); err == nil {
		t.Fatal("a non-member's exchange was answered")
	}
}

// TestSpreadLoop: an order taken on one member reaches every neighbour
// through Spread, and all end with the same orders. (Two pushes of a new
// order that arrive at once may both carry it out: the purge is
// idempotent.)
func TestSpreadLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := newTestMembers(t, 3, true)
	for _, m := range ms {
		go m.x.SpreadLoop(ctx)
	}
	victim := newTestSigner(t).Peer()
	o, err := NewOrder(ms[0].signer, victim, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ms[0].book.Take(ctx, o); err != nil {
		t.Fatal(err)
	}
	_, want := ms[0].book.List()
	for _, m := range ms {
		testwait.For(t, "the order on every member", 10*time.Second, func() error {
			if _, d := m.book.List(); d != want || m.store.times(victim) == 0 {
				return fmt.Errorf("a member holds digest %q (want %q) and purged the victim %d times", d, want, m.store.times(victim))
			}
			return nil
		})
	}
}
