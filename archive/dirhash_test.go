package archive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// bruteSum sums every entry whose key lies in (a, b].
func bruteSum(all []Entry, a, b id.ID) DirSum {
	var d DirSum
	for _, e := range all {
		if id.InHalfOpen(e.Key, a, b) {
			d.add(entrySum(e))
		}
	}
	return d
}

func TestDirHashes(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	for i := 0; i < 400; i++ {
		mustPut(t, s, capture(fmt.Sprintf("http://h%d.example/%d", i%7, i), t0, fmt.Sprint("body", i)))
		if i%3 == 0 { // a second version on another day
			mustPut(t, s, capture(fmt.Sprintf("http://h%d.example/%d", i%7, i), t0.Add(48*3600e9), fmt.Sprint("body2", i)))
		}
	}
	all, err := s.Entries(ctx, id.ID{}, id.ID{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 400+134 {
		t.Fatalf("entries %d", len(all))
	}
	root, err := s.DirHash(ctx, RootLevel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if root != bruteSum(all, id.ID{}, id.ID{}) {
		t.Fatal("root hash differs from the XOR of all entries")
	}
	// Children of the root and of one first-level directory add up.
	kids, err := s.ChildHashes(ctx, RootLevel, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sum DirSum
	for _, k := range kids {
		sum.add(k)
	}
	if sum != root {
		t.Fatal("level-1 hashes do not add up to the root")
	}
	p := all[0].Key[:1]
	leaves, err := s.ChildHashes(ctx, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	sum = DirSum{}
	for i, l := range leaves {
		sum.add(l)
		leaf, _ := s.DirHash(ctx, LeafLevel, []byte{p[0], byte(i)})
		if leaf != l {
			t.Fatalf("leaf %x/%x: ChildHashes %v, DirHash %v", p[0], i, l, leaf)
		}
	}
	if sum != kids[p[0]] {
		t.Fatal("leaf hashes do not add up to their parent")
	}

	rng := rand.New(rand.NewPCG(1, 2))
	randID := func() id.ID {
		var x id.ID
		for i := range x {
			x[i] = byte(rng.IntN(256))
		}
		return x
	}
	ranges := [][2]id.ID{
		{id.ID{}, id.ID{}},
		{maxID, maxID},
		{maxID, all[3].Key},
		{all[0].Key, all[len(all)-1].Key},
		{all[len(all)-1].Key, all[0].Key}, // wraps
		{all[5].Key, all[6].Key},
		{all[6].Key, all[5].Key},
	}
	for i := 0; i < 60; i++ {
		ranges = append(ranges, [2]id.ID{randID(), randID()})
	}
	for _, r := range ranges {
		got, err := s.RangeSum(ctx, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteSum(all, r[0], r[1]); got != want {
			t.Fatalf("RangeSum(%s, %s) = %d entries, want %d", r[0].Short(), r[1].Short(), got.Count, want.Count)
		}
		n := 0
		err = s.Range(ctx, r[0], r[1], func(v Version) error {
			if !id.InHalfOpen(v.Key, r[0], r[1]) {
				return fmt.Errorf("version %s outside range", v.Key.Short())
			}
			n++
			return nil
		})
		if err != nil || int64(n) != got.Count {
			t.Fatalf("Range: %d versions, %v; want %d", n, err, got.Count)
		}
	}
	if _, err := s.DirHash(ctx, 3, make([]byte, 3)); err == nil {
		t.Fatal("level 3 accepted")
	}
	if _, err := s.DirHash(ctx, 2, []byte{1}); err == nil {
		t.Fatal("short prefix accepted")
	}
}

func TestSplitRing(t *testing.T) {
	one := id.ID{}.AddPow2(0)
	cases := []struct {
		name string
		a, b id.ID
		want []keyRange
	}{
		{"whole", one, one, []keyRange{{id.ID{}, maxID}}},
		{"simple", id.ID{}, one, []keyRange{{one, one}}},
		{"from max", maxID, one, []keyRange{{id.ID{}, one}}},
		{"wrap", one, id.ID{}, []keyRange{{one.AddPow2(0), maxID}, {id.ID{}, id.ID{}}}},
	}
	for _, tc := range cases {
		got := splitRing(tc.a, tc.b)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReplicaSyncByDirHashes runs the reconciliation replicate is meant to
// do with this API — compare the root, descend into differing directories
// with ChildHashes, list differing leaves with Entries, copy with
// ReadFile/Import — and checks that two diverged replicas converge while
// exchanging sums only for the differing branches.
func TestReplicaSyncByDirHashes(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, Options{NoSync: true})
	b := openTest(t, Options{NoSync: true})
	for i := 0; i < 100; i++ {
		c := capture(fmt.Sprintf("http://sync.example/%d", i), t0, fmt.Sprint("body ", i))
		switch {
		case i%10 == 3:
			mustPut(t, a, c) // only on a
		case i%10 == 7:
			mustPut(t, b, c) // only on b
		default:
			mustPut(t, a, c)
			mustPut(t, b, c)
		}
	}
	sums := 0 // DirSums a peer would send
	copyMissing := func(from, to *Store, ents map[string]Entry) {
		for name, e := range ents {
			data, err := from.ReadFile(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := to.Import(ctx, name, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := func(s *Store, level int, p []byte) map[string]Entry {
		lo, hi := DirRange(level, p)
		ents, err := s.Entries(ctx, lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string]Entry)
		for _, e := range ents {
			m[e.Name()] = e
		}
		return m
	}
	var walk func(level int, p []byte)
	walk = func(level int, p []byte) {
		ka, _ := a.ChildHashes(ctx, level, p)
		kb, _ := b.ChildHashes(ctx, level, p)
		sums += 256
		for i := range ka {
			if ka[i] == kb[i] {
				continue
			}
			child := append(append([]byte(nil), p[:level]...), byte(i))
			if level+1 < LeafLevel {
				walk(level+1, child)
				continue
			}
			na, nb := names(a, LeafLevel, child), names(b, LeafLevel, child)
			for n := range nb {
				delete(na, n)
			}
			for n := range names(a, LeafLevel, child) {
				delete(nb, n)
			}
			copyMissing(a, b, na)
			copyMissing(b, a, nb)
		}
	}
	ra, _ := a.DirHash(ctx, RootLevel, nil)
	rb, _ := b.DirHash(ctx, RootLevel, nil)
	if ra == rb {
		t.Fatal("diverged replicas have equal root hashes")
	}
	walk(RootLevel, nil)
	ra, _ = a.DirHash(ctx, RootLevel, nil)
	rb, _ = b.DirHash(ctx, RootLevel, nil)
	if ra != rb || ra.Count != 100 {
		t.Fatalf("after sync: %v vs %v", ra, rb)
	}
	// Each leaf's range holds exactly that leaf.
	for _, e := range []Entry{{Key: maxID}, {Key: id.ID{}}} {
		lo, hi := DirRange(LeafLevel, e.Key[:])
		if !id.InHalfOpen(e.Key, lo, hi) || id.InHalfOpen(prevID(lo), lo, hi) || id.InHalfOpen(hi.AddPow2(0), lo, hi) {
			t.Fatalf("DirRange of %x: (%s, %s]", e.Key[:2], lo, hi)
		}
	}
	t.Logf("sync exchanged %d directory sums (%d bytes) for 20 differing files", sums, sums*28)
}
