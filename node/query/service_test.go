package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestLocalPagePagesOnce: pages of two rows, each resumed after the last
// row of the one before, give every capture of the query once, in CDX
// order (and in reverse order the other way round).
func TestLocalPagePagesOnce(t *testing.T) {
	svc := storeService(t, "http://h.example/b", "http://h.example/a", "http://www.h.example/c", "http://x.example/")
	all, err := svc.localList(context.Background(), archive.Query{Host: "h.example"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, reverse := range []bool{false, true} {
		var got []archive.Version
		pr := pageRequest{N: 2, Reverse: reverse}
		for {
			rows, more, err := svc.localPage(context.Background(), archive.Query{Host: "h.example"}, pr)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				got = append(got, r.Version)
			}
			if !more {
				break
			}
			k := cdx.KeyOf(rows[len(rows)-1].Version)
			pr.After = &k
		}
		want := slices.Clone(all)
		if reverse {
			slices.Reverse(want)
		}
		if !slices.EqualFunc(got, want, sameVersion) {
			t.Fatalf("reverse %v: paged %d captures, want %d in order", reverse, len(got), len(want))
		}
	}
	if _, _, err := svc.localPage(context.Background(), archive.Query{Host: "h.example"}, pageRequest{N: maxPage + 1}); err == nil {
		t.Fatal("page over maxPage accepted")
	}
}

// fakeRing has real nodes peer0..peerN-1 in ring order, one virtual
// server each; walks from the virtual servers in broken fail with the
// nodes found so far, and lookups of other keys fail with lookupErr when
// it is set.
type fakeRing struct {
	nodes     []ring.Node
	self      int
	broken    map[int]bool
	lookupErr error
	lookups   int // of keys other than the virtual servers'
}

func newFakeRing(n int) *fakeRing {
	fr := &fakeRing{broken: map[int]bool{}}
	for i := range n {
		c := ring.Contact{Addr: fmt.Sprintf("10.0.0.%d:4000", i+1)}
		fr.nodes = append(fr.nodes, ring.Node{ID: id.OfString(c.Addr), Contact: c})
	}
	slices.SortFunc(fr.nodes, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
	for i := range fr.nodes {
		fr.nodes[i].Peer = fmt.Sprintf("peer%d", i)
	}
	return fr
}

func (fr *fakeRing) Vnodes() []ring.Node { return fr.nodes[fr.self : fr.self+1] }

func (fr *fakeRing) Successors(_ context.Context, key id.ID, k int) ([]ring.Node, error) {
	i := slices.IndexFunc(fr.nodes, func(n ring.Node) bool { return n.ID == key })
	if i < 0 {
		fr.lookups++
		if fr.lookupErr != nil {
			return nil, fr.lookupErr
		}
		i = fr.owner(key)
	}
	var out []ring.Node
	for j := range min(k, len(fr.nodes)) {
		out = append(out, fr.nodes[(i+j)%len(fr.nodes)])
		if fr.broken[i] && j == 1 {
			return out, errors.New("successor down")
		}
	}
	return out, nil
}

// owner returns the index of key's owner: the first node at or after it.
func (fr *fakeRing) owner(key id.ID) int {
	i, _ := slices.BinarySearchFunc(fr.nodes, key, func(n ring.Node, k id.ID) int { return n.ID.Cmp(k) })
	return i % len(fr.nodes)
}

func TestMembers(t *testing.T) {
	fr := newFakeRing(5)
	fr.self = 2
	svc := &Service{Self: fr.nodes[2].Contact, Ring: fr}
	ms, err := svc.Members(context.Background())
	if err != nil || len(ms) != 5 || ms[0] != svc.Self {
		t.Fatalf("members %v, %v: want all 5, this node first", ms, err)
	}
	fr.broken[2] = true
	ms, err = svc.Members(context.Background())
	if !errors.Is(err, ErrPartial) || len(ms) != 2 || ms[0] != svc.Self {
		t.Fatalf("broken walk: members %v, %v: want a partial list starting with this node", ms, err)
	}

	big := newFakeRing(maxMembers + 5)
	svc = &Service{Self: big.nodes[0].Contact, Ring: big}
	ms, err = svc.Members(context.Background())
	if !errors.Is(err, ErrPartial) || len(ms) != maxMembers {
		t.Fatalf("%d real nodes: %d members, %v; want the first %d and a partial error", len(big.nodes), len(ms), err, maxMembers)
	}
}
