package replication

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestCopyTrackerVerdict: a record's verdict for n-1 replica
// confirmations follows the push's events: pending until enough
// replicas confirm, short as soon as too few can (a replica gave up, the
// range has fewer replicas, the record is foreign), and a replica the
// record is handed again to may confirm after all.
func TestCopyTrackerVerdict(t *testing.T) {
	a, b := ring.Contact{Peer: "a"}, ring.Contact{Peer: "b"}
	type step func(*copyTracker)
	route := func(cs ...ring.Contact) step { return func(t *copyTracker) { routedLocked(t, cs) } }
	ack := func(c ring.Contact, ok bool) step { return func(t *copyTracker) { ackedLocked(t, c, ok) } }
	lost := func(t *copyTracker) { lostLocked(t) }
	cases := []struct {
		name  string
		need  int
		steps []step
		want  []int // verdict after each step
	}{
		{"two of two", 2, []step{route(a, b), ack(a, true), ack(b, true)}, []int{copiesPending, copiesPending, copiesMade}},
		{"one of two", 1, []step{route(a, b), ack(b, true)}, []int{copiesPending, copiesMade}},
		{"a replica gives up", 2, []step{route(a, b), ack(a, true), ack(b, false)}, []int{copiesPending, copiesPending, copiesShort}},
		{"one gives up, one is enough", 1, []step{route(a, b), ack(a, false), ack(b, true)}, []int{copiesPending, copiesPending, copiesMade}},
		{"handed again after a failure", 2, []step{route(a, b), ack(a, true), ack(b, false), route(a, b), ack(b, true)},
			[]int{copiesPending, copiesPending, copiesShort, copiesPending, copiesMade}},
		{"fewer replicas than asked", 2, []step{route(a)}, []int{copiesShort}},
		{"no replica", 1, []step{route()}, []int{copiesShort}},
		{"foreign", 1, []step{lost}, []int{copiesShort}},
		{"a confirmation is not undone", 1, []step{route(a), ack(a, true), ack(a, false)}, []int{copiesPending, copiesMade, copiesMade}},
	}
	for _, c := range cases {
		tr := newCopyTracker()
		if v := tr.verdict(c.need); v != copiesPending {
			t.Fatalf("%s: verdict before any step %d", c.name, v)
		}
		for i, s := range c.steps {
			s(tr)
			if v := tr.verdict(c.need); v != c.want[i] {
				t.Errorf("%s: after step %d verdict %d, want %d", c.name, i, v, c.want[i])
			}
		}
	}
}

// TestWaitCopies: WaitCopies returns when the push's answers make the
// copies, as soon as they cannot be made, or when its context ends; a
// record never tracked (TrackCopies off) is short at once.
func TestWaitCopies(t *testing.T) {
	a, b := ring.Contact{Peer: "a"}, ring.Contact{Peer: "b"}
	v := archive.Version{Key: id.OfString("k"), Digest: id.OfString("d"), Day: 1}
	ctx := context.Background()

	r := New(Config{TrackCopies: true})
	r.Notify(v)
	tr := r.pq.recs[0].t
	got := make(chan error, 1)
	go func() { got <- r.WaitCopies(ctx, v, 3) }()
	r.mu.Lock()
	routedLocked(tr, []ring.Contact{a, b})
	ackedLocked(tr, a, true)
	r.mu.Unlock()
	r.mu.Lock()
	ackedLocked(tr, b, true)
	r.mu.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("both replicas confirmed: %v", err)
	}
	if st := r.Stats().Push; st.Waits != 1 || len(r.trk) != 0 {
		t.Fatalf("after the wait: %+v, %d tracked", st, len(r.trk))
	}

	r.Notify(v)
	tr = r.pq.recs[1].t
	go func() { got <- r.WaitCopies(ctx, v, 3) }()
	r.mu.Lock()
	routedLocked(tr, []ring.Contact{a, b})
	ackedLocked(tr, a, false)
	r.mu.Unlock()
	if err := <-got; !errors.Is(err, ErrFewerCopies) {
		t.Fatalf("a replica gave up: %v", err)
	}

	r.Notify(v)
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := r.WaitCopies(tctx, v, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no answer before the deadline: %v", err)
	}
	if err := r.WaitCopies(ctx, v, 1); err != nil {
		t.Fatalf("one copy (this node's): %v", err)
	}
	if st := r.Stats().Push; st.WaitsShort != 1 || st.WaitsLate != 1 {
		t.Fatalf("counters: %+v", st)
	}

	off := New(Config{})
	off.Notify(v)
	if err := off.WaitCopies(ctx, v, 2); !errors.Is(err, ErrFewerCopies) {
		t.Fatalf("untracked: %v", err)
	}
}
