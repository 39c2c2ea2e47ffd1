package search

import (
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
