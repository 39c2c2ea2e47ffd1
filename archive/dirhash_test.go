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
