package purge

import (
	"context"
	"errors"
	"github.com/herod-archive/herod/node/identity"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// newTestSigner returns the signer of a fresh node identity.
func newTestSigner(t *testing.T) identity.Signer {
	t.Helper()
	s, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeStore records the peers purged; each purge takes delay.
type fakeStore struct {
	mu     sync.Mutex
	purged map[string]int
	delay  time.Duration
}

func (s *fakeStore) PurgePeer(_ context.Context, p string) (int, error) {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.purged == nil {
		s.purged = map[string]int{}
	}
	s.purged[p]++
	return 5, nil
}

func (s *fakeStore) times(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.purged[p]
}

func order(t *testing.T, signer identity.Signer, issuer, p string, at time.Time) Order {
	t.Helper()
	o := Order{Peer: p, Issuer: issuer, Time: at}
	sig, err := signer.Sign(Message(o))
	if err != nil {
		t.Fatal(err)
	}
	o.Sig = sig
	return o
}

// TestOrderChecks: which orders a Book carries out: an authority's, a
// peer's retraction, its own; not another member's, nor a forged,
// altered or future-dated one. An altered copy refused first does not get
// the authentic order refused.
func TestOrderChecks(t *testing.T) {
	ctx := context.Background()
	self, auth, member, victim := newTestSigner(t), newTestSigner(t), newTestSigner(t), newTestSigner(t)
	store := &fakeStore{}
	var taken []string
	b, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "orders"), Self: self.Peer(),
		Authorities: []string{auth.Peer()}, Store: store, Verifier: identity.Verifier{}, Skew: time.Minute,
		Taken: func(p string) { taken = append(taken, p) }})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	genuine := order(t, auth, auth.Peer(), victim.Peer(), now)
	altered := genuine
	altered.Peer = member.Peer()
	for _, tc := range []struct {
		name string
		o    Order
		want error // nil: carried out
	}{
		{"another member's order", order(t, member, member.Peer(), victim.Peer(), now), ErrUnauthorized},
		{"in the authority's name, signed by a member", order(t, member, auth.Peer(), victim.Peer(), now), ErrInvalid},
		{"in this node's name, signed by a member", order(t, member, self.Peer(), victim.Peer(), now), ErrInvalid},
		{"the authority's order with the peer changed", altered, ErrInvalid},
		{"the authority's order, dated in an hour", order(t, auth, auth.Peer(), victim.Peer(), now.Add(time.Hour)), ErrInvalid},
		{"not a peer id", order(t, auth, auth.Peer(), "victim", now), ErrInvalid},
		{"the authority's order", genuine, nil},
		{"a retraction", order(t, member, member.Peer(), member.Peer(), now), nil},
		{"this node's own order", order(t, self, self.Peer(), auth.Peer(), now), nil},
	} {
		_, _, err := b.Take(ctx, tc.o)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if st := b.Stats(); st.Orders != 3 || st.Refused != 6 || st.Versions != 15 {
		t.Errorf("stats %+v, want 3 orders, 6 refused, 15 versions", st)
	}
	for _, p := range []string{victim.Peer(), member.Peer(), auth.Peer()} {
		if store.times(p) != 1 {
			t.Errorf("%s purged %d times, want once", p, store.times(p))
		}
	}
	if len(taken) != 3 {
		t.Errorf("Taken called for %v, want the 3 orders carried out", taken)
	}
	// Taking a kept order again does nothing.
	if _, isNew, err := b.Take(ctx, genuine); err != nil || isNew {
		t.Errorf("the authority's order again: new %v, %v", isNew, err)
	}
	if store.times(victim.Peer()) != 1 {
		t.Error("an order taken twice purged twice")
	}
}

// TestOrderFinishedAtOpen: a node that crashed after keeping an order and
// before its purge ended finishes the purge when it opens its Book again,
// and records it done; a torn last line of the orders file is ignored and
// cut off.
func TestOrderFinishedAtOpen(t *testing.T) {
	ctx := context.Background()
	x := newTestSigner(t)
	path := filepath.Join(t.TempDir(), "orders")
	o := order(t, x, x.Peer(), x.Peer(), time.Now()) // a retraction
	if err := appendRecord(path, record{Order: o}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"peer":"12D3Koo`) // torn
	f.Close()

	store := &fakeStore{}
	b, err := Open(ctx, Config{Path: path, Self: newTestSigner(t).Peer(), Store: store, Verifier: identity.Verifier{}})
	if err != nil {
		t.Fatal(err)
	}
	if store.times(x.Peer()) != 1 {
		t.Errorf("the order cut short was purged %d times at Open, want once", store.times(x.Peer()))
	}
	if st := b.Stats(); st.Orders != 1 {
		t.Errorf("orders %+v, want 1", st)
	}
	recs, err := loadRecords(path)
	if err != nil || len(recs) != 1 || !recs[0].Done {
		t.Errorf("orders file after Open: %+v, %v; want the order, done", recs, err)
	}
	// Opened again, nothing is left to finish.
	if _, err := Open(ctx, Config{Path: path, Self: x.Peer(), Store: store, Verifier: identity.Verifier{}}); err != nil {
		t.Fatal(err)
	}
	if store.times(x.Peer()) != 1 {
		t.Error("an order done was purged again at the next Open")
	}
}

// TestConcurrentTakes: the same order taken by several exchanges at once
// is carried out, kept and counted once.
func TestConcurrentTakes(t *testing.T) {
	ctx := context.Background()
	x := newTestSigner(t)
	path := filepath.Join(t.TempDir(), "orders")
	store := &fakeStore{delay: 20 * time.Millisecond}
	b, err := Open(ctx, Config{Path: path, Self: newTestSigner(t).Peer(), Store: store, Verifier: identity.Verifier{}})
	if err != nil {
		t.Fatal(err)
	}
	o := order(t, x, x.Peer(), x.Peer(), time.Now()) // a retraction
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, isNew, err := b.Take(ctx, o)
			if err != nil {
				t.Error(err)
			}
			if isNew {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fresh != 1 || store.times(x.Peer()) != 1 {
		t.Errorf("8 concurrent Takes: %d new, %d purges; want 1 and 1", fresh, store.times(x.Peer()))
	}
	if st := b.Stats(); st.Orders != 1 || st.Versions != 5 {
		t.Errorf("stats %+v, want 1 order and 5 versions", st)
	}
	raw, err := os.ReadFile(path)
	if lines := strings.Count(string(raw), "\n"); err != nil || lines != 2 {
		t.Errorf("orders file: %d lines, %v; want the order and its done record", lines, err)
	}
	// Taken again later: known, not new.
	if _, isNew, err := b.Take(ctx, o); err != nil || isNew {
		t.Errorf("a kept order taken again: new %v, %v", isNew, err)
	}
}

// TestListDigest: equal orders give equal digests whatever the order
// they were taken in; different ones differ.
func TestListDigest(t *testing.T) {
	ctx := context.Background()
	a, c := newTestSigner(t), newTestSigner(t)
	oa := order(t, a, a.Peer(), a.Peer(), time.Now())
	oc := order(t, c, c.Peer(), c.Peer(), time.Now())
	open := func() *Book {
		b, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "orders"), Self: newTestSigner(t).Peer(), Store: &fakeStore{}, Verifier: identity.Verifier{}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b1, b2, b3 := open(), open(), open()
	for _, step := range []struct {
		b *Book
		o Order
	}{{b1, oa}, {b1, oc}, {b2, oc}, {b2, oa}, {b3, oa}} {
		if _, _, err := step.b.Take(ctx, step.o); err != nil {
			t.Fatal(err)
		}
	}
	l1, d1 := b1.List()
	_, d2 := b2.List()
	_, d3 := b3.List()
	if d1 != d2 || d1 == d3 || len(l1) != 2 || l1[0].Peer > l1[1].Peer {
		t.Errorf("digests %s %s %s, list %v", d1, d2, d3, l1)
	}
}

// TestRetractionsBounded: peers' purges of themselves (any fresh key
// signs one) are kept up to MaxSelfPurges; past it they are refused, and
// an authority's order is still carried out.
func TestRetractionsBounded(t *testing.T) {
	ctx := context.Background()
	self, auth, victim := newTestSigner(t), newTestSigner(t), newTestSigner(t)
	b, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "orders"), Self: self.Peer(),
		Authorities: []string{auth.Peer()}, Store: &fakeStore{}, Verifier: identity.Verifier{}, Skew: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range MaxSelfPurges + 5 {
		k := newTestSigner(t)
		_, _, err := b.Take(ctx, order(t, k, k.Peer(), k.Peer(), now))
		if (i < MaxSelfPurges) != (err == nil) {
			t.Fatalf("retraction %d: %v", i, err)
		}
	}
	if _, isNew, err := b.Take(ctx, order(t, auth, auth.Peer(), victim.Peer(), now)); err != nil || !isNew {
		t.Fatalf("an authority's order after the retractions: new %v, %v", isNew, err)
	}
	if st := b.Stats(); st.Orders != MaxSelfPurges+1 {
		t.Errorf("%d orders kept, want %d", st.Orders, MaxSelfPurges+1)
	}
}
