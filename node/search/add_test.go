package search

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// TestPostingsByPeer: each real node gets exactly the postings of the
// runs it holds, in key order; a node whose runs are adjacent gets a
// view of the sorted postings that an append cannot write through, the
// others a copy of their own.
func TestPostingsByPeer(t *testing.T) {
	sorted := make([]fts.Posting, 9)
	for i := range sorted {
		sorted[i] = fts.Posting{Term: fmt.Sprint("t", i)}
	}
	c := func(p string) ring.Contact { return ring.Contact{Peer: p} }
	runs := []postingRun{
		{hs: []ring.Contact{c("A"), c("B"), c("C")}, lo: 0, hi: 3},
		{hs: []ring.Contact{c("B"), c("C"), c("D")}, lo: 3, hi: 5},
		{hs: []ring.Contact{c("C"), c("D"), c("A")}, lo: 5, hi: 9},
	}
	byPeer, contacts := postingsByPeer(sorted, runs)
	terms := func(ps []fts.Posting) (out []string) {
		for _, p := range ps {
			out = append(out, p.Term)
		}
		return out
	}
	want := map[string][]string{
		"A": {"t0", "t1", "t2", "t5", "t6", "t7", "t8"},
		"B": {"t0", "t1", "t2", "t3", "t4"},
		"C": {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"},
		"D": {"t3", "t4", "t5", "t6", "t7", "t8"},
	}
	if len(byPeer) != len(want) || len(contacts) != len(want) {
		t.Fatalf("%d peers, %d contacts, want %d", len(byPeer), len(contacts), len(want))
	}
	for p, w := range want {
		got := byPeer[p]
		if !slices.Equal(terms(got), w) {
			t.Errorf("%s gets %v, want %v", p, terms(got), w)
		}
		if contacts[p].Peer != p {
			t.Errorf("contact of %s: %+v", p, contacts[p])
		}
		if cap(got) != len(got) {
			t.Errorf("%s's postings have room past their end (%d of %d): an append would write into another's", p, len(got), cap(got))
		}
	}
	// C holds every run: it is sent the sorted postings, not a copy.
	if &byPeer["C"][0] != &sorted[0] {
		t.Error("the node holding every run got a copy of the postings")
	}
	byPeer["A"][0].Term = "changed" // a copy: sorted is untouched
	if sorted[0].Term != "t0" {
		t.Error("the copy of a node's runs shares the sorted postings")
	}
}

// oneNodeRing is a ring of one node with one virtual server: it owns
// every key.
type oneNodeRing struct{ n ring.Node }

func (r oneNodeRing) OwnerVnode(id.ID) (ring.Node, bool)               { return r.n, true }
func (r oneNodeRing) Lookup(context.Context, id.ID) (ring.Node, error) { return r.n, nil }
func (r oneNodeRing) Vnodes() []ring.Node                              { return []ring.Node{r.n} }
func (r oneNodeRing) Predecessor(id.ID) (ring.Node, bool)              { return r.n, true }
func (r oneNodeRing) SuccessorsFrom(context.Context, ring.Node, int) ([]ring.Node, error) {
	return []ring.Node{r.n}, nil
}

// BenchmarkAdd is a node alone adding the postings of 256 pages of 300
// terms each (an indexing batch) to its own store.
//
//	go test -run - -bench BenchmarkAdd -benchmem ./node/search/
func BenchmarkAdd(b *testing.B) {
	st, err := fts.OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	self := ring.Node{ID: id.OfString("self"), Contact: ring.Contact{Peer: "self"}}
	sv := &Service{Store: st, Self: self.Contact, Ring: oneNodeRing{self}, K: 3}
	var ps []fts.Posting
	for page := range 256 {
		u := fmt.Sprintf("http://h%d.example/p%d", page%7, page)
		for term := range 300 {
			ps = append(ps, fts.Posting{Term: fmt.Sprint("term", (page*37+term*101)%5000), Key: id.OfString(u),
				URL: u, From: 1000, To: fts.Open, TF: 1, DocLen: 300})
		}
	}
	ctx := context.Background()
	for b.Loop() {
		if err := sv.Add(ctx, ps); err != nil {
			b.Fatal(err)
		}
	}
}
