package search

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	fts "github.com/herod-archive/herod/search"
)

func TestAddFrame(t *testing.T) {
	var ps []fts.Posting
	for i := range 500 {
		u := "http://a.example/page/" + string(rune('a'+i%26))
		ps = append(ps, fts.Posting{Term: "t" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Key: id.OfString(u), URL: u, From: 1, To: fts.Open, TF: uint32(1 + i%3), TitleTF: uint32(i % 2), DocLen: 10})
	}
	b := encodeAdd(ps)
	raw, set := 0, len(fts.AppendPostingSet(nil, ps))
	for _, p := range ps {
		raw += len(p.AppendBinary(nil))
	}
	t.Logf("%d postings: %d bytes one by one, %d as a set, %d compressed", len(ps), raw, set, len(b))
	got, err := decodeAdd(b, len(ps))
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	order := func(a, b fts.Posting) int {
		return cmp.Or(strings.Compare(a.Term, b.Term), strings.Compare(a.URL, b.URL))
	}
	want := slices.Clone(ps)
	slices.SortFunc(want, order)
	slices.SortFunc(got, order)
	if !slices.Equal(got, want) {
		t.Fatalf("round trip: %d postings, not those sent", len(got))
	}
	if _, err := decodeAdd(b, len(ps)-1); err == nil {
		t.Error("a count other than the header's: no error")
	}
	// A bomb: more than maxAddRaw decompressed is refused.
	bomb := zenc.EncodeAll(bytes.Repeat([]byte{0}, maxAddRaw+1), nil)
	if _, err := decodeAdd(bomb, 1); err == nil {
		t.Error("a bomb: no error")
	}
	if _, err := decodeAdd([]byte("not zstd"), 1); err == nil {
		t.Error("garbage: no error")
	}
}
