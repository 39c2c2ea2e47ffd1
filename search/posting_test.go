package search

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

func TestPostingRoundTrip(t *testing.T) {
	p := Posting{Term: "archiv", Key: id.OfString("http://a.example/"), URL: "http://a.example/", From: 1700000000000, To: Open, TF: 3, TitleTF: 1, DocLen: 250}
	b := p.AppendBinary([]byte("x")[:0])
	b = Posting{Term: "b", Key: p.Key, URL: p.URL, From: 1, To: 2, TF: 1, DocLen: 1}.AppendBinary(b)
	got, rest, err := DecodePosting(b)
	if err != nil || got != p {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, p)
	}
	if _, rest, err = DecodePosting(rest); err != nil || len(rest) != 0 {
		t.Fatalf("second: rest %d, %v", len(rest), err)
	}
}

func FuzzDecodePosting(f *testing.F) {
	f.Add(Posting{Term: "t", URL: "http://a/", From: 1, TF: 1, DocLen: 1}.AppendBinary(nil))
	f.Add([]byte{0})
	f.Add([]byte{200, 1, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, rest, err := DecodePosting(b)
		if err != nil {
			return
		}
		again, rest2, err := DecodePosting(p.AppendBinary(nil))
		if err != nil || again != p || len(rest2) != 0 || len(rest) > len(b) {
			t.Fatalf("round trip of %+v: %+v, %v", p, again, err)
		}
	})
}

func TestPostingSetRoundTrip(t *testing.T) {
	a, b := "http://a.example/", "http://b.example/x"
	ps := []Posting{
		{Term: "war", Key: id.OfString(b), URL: b, From: 5, To: Open, TF: 2, DocLen: 9},
		{Term: "war", Key: id.OfString(a), URL: a, From: 1700000000000, To: 1700000050000, TF: 3, TitleTF: 1, DocLen: 250},
		{Term: "peace", Key: id.OfString(a), URL: a, From: 1700000000000, To: 1700000050000, TF: 1, DocLen: 250},
		// The same version told another end: sent as a version of its own.
		{Term: "ship", Key: id.OfString(a), URL: a, From: 1700000000000, To: Open, TF: 1, DocLen: 250},
	}
	enc := AppendPostingSet(nil, ps)
	got, err := DecodePostingSet(enc, len(ps))
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(got, ps) {
		t.Fatalf("decoded %+v, want %+v", got, ps)
	}
	if _, err := DecodePostingSet(enc, len(ps)+1); err == nil {
		t.Error("a count other than the set's: no error")
	}
	if _, err := DecodePostingSet(enc[:len(enc)-1], len(ps)); err == nil {
		t.Error("a cut set: no error")
	}
	if b, err := DecodePostingSet(AppendPostingSet(nil, nil), 0); err != nil || len(b) != 0 {
		t.Errorf("empty set: %v, %v", b, err)
	}
}

// sameSet reports whether a and b hold the same postings in any order.
func sameSet(a, b []Posting) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[Posting]int{}
	for _, p := range a {
		n[p]++
	}
	for _, p := range b {
		if n[p]--; n[p] < 0 {
			return false
		}
	}
	return true
}

func FuzzDecodePostingSet(f *testing.F) {
	u := "http://a.example/"
	f.Add(AppendPostingSet(nil, []Posting{{Term: "t", Key: id.OfString(u), URL: u, From: 1, TF: 1, DocLen: 1}}), 1)
	f.Add(AppendPostingSet(nil, []Posting{
		{Term: "t", Key: id.OfString(u), URL: u, From: 1, To: 5, TF: 2, TitleTF: 1, DocLen: 4},
		{Term: "u", Key: id.OfString(u), URL: u, From: 1, To: 5, TF: 1, DocLen: 4},
	}), 2)
	f.Add([]byte{setFormat, 200, 1}, 3)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		ps, err := DecodePostingSet(b, n)
		if err != nil {
			return
		}
		again, err := DecodePostingSet(AppendPostingSet(nil, ps), n)
		if err != nil || !sameSet(again, ps) {
			t.Fatalf("round trip of %d postings: %d, %v", len(ps), len(again), err)
		}
	})
}

func FuzzDecodeBlock(f *testing.F) {
	f.Add(appendBlock(nil, []entry{{num: 3, tf: 2, titleTF: 1}, {num: 9, tf: 1}}), uint32(tailBound))
	f.Add([]byte{1, 0, 2}, uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, bound uint32) {
		es, err := decodeBlock(nil, bound, b)
		if err != nil {
			return
		}
		again, err := decodeBlock(nil, bound, appendBlock(nil, es))
		if err != nil || !slices.Equal(again, es) {
			t.Fatalf("round trip of %v: %v, %v", es, again, err)
		}
		for i, e := range es {
			if e.num > bound || e.tf == 0 || e.titleTF > e.tf || (i > 0 && e.num <= es[i-1].num) {
				t.Fatalf("entry %d %+v of bound %d", i, e, bound)
			}
		}
	})
}

// BenchmarkAppendPostingSet encodes an add as the search service sends
// one to a term's holder: the postings of 40 versions of 300 terms each,
// sorted by URL key (deliver), each version's terms in the indexer's
// order.
//
//	go test ./search -run '^$' -bench AppendPostingSet -cpu 1
func BenchmarkAppendPostingSet(b *testing.B) {
	var ps []Posting
	for v := range 40 {
		u := fmt.Sprintf("http://h%d.example/page/%d", v%7, v)
		for t := range 300 {
			ps = append(ps, Posting{Term: fmt.Sprintf("term%d", (t*7919+v*31)%5000), Key: id.OfString(u), URL: u,
				From: 1700000000000 + int64(v), To: Open, TF: uint32(1 + t%5), DocLen: 900})
		}
	}
	slices.SortStableFunc(ps, func(a, b Posting) int { return a.Key.Cmp(b.Key) })
	b.ReportAllocs()
	for b.Loop() {
		AppendPostingSet(nil, ps)
	}
}

// TestPostingSetAnyOrder encodes random sets — versions told with other
// ends, postings repeated — in shuffled orders: each decodes to the set,
// and every order encodes to the same bytes.
func TestPostingSetAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 100 {
		var ps []Posting
		for range 1 + rng.IntN(200) {
			u := fmt.Sprintf("http://h%d.example/%d", rng.IntN(3), rng.IntN(6))
			to := Open
			if rng.IntN(3) == 0 {
				to = 1700000000900
			}
			p := Posting{Term: fmt.Sprintf("t%d", rng.IntN(20)), Key: id.OfString(u), URL: u,
				From: 1700000000000 + int64(rng.IntN(2)), To: to, TF: uint32(1 + rng.IntN(3)), DocLen: 50}
			if p.TF > 1 && rng.IntN(2) == 0 {
				p.TitleTF = 1
			}
			ps = append(ps, p)
			if rng.IntN(8) == 0 {
				ps = append(ps, p) // the same posting twice
			}
		}
		enc := AppendPostingSet(nil, ps)
		got, err := DecodePostingSet(enc, len(ps))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !sameSet(got, ps) {
			t.Fatalf("round %d: decoded %d postings, not the %d sent", round, len(got), len(ps))
		}
		rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		if again := AppendPostingSet(nil, ps); !bytes.Equal(again, enc) {
			t.Fatalf("round %d: another order encodes to other bytes", round)
		}
	}
}
