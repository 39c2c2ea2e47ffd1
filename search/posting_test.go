package search

import (
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
