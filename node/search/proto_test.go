package search

import (
	"bytes"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	fts "github.com/herod-archive/herod/search"
)

func TestAddFrame(t *testing.T) {
	var ps []fts.Posting
	for i := range 500 {
		u := "http://a.example/page/" + string(rune('a'+i%26))
		ps = append(ps, fts.Posting{Term: "t" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Key: id.OfString(u), URL: u, From: 1, To: fts.Open, TF: 1, DocLen: 10})
	}
	b := encodeAdd(ps)
	raw := 0
	for _, p := range ps {
		raw += len(p.AppendBinary(nil))
	}
	t.Logf("%d postings: %d bytes encoded, %d compressed", len(ps), raw, len(b))
	got, err := decodeAdd(b, len(ps))
	if err != nil || len(got) != len(ps) || got[7] != ps[7] {
		t.Fatalf("round trip: %d postings, %v", len(got), err)
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
