package forward

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestLinksCodecRoundTrip(t *testing.T) {
	var urls []string
	for i := 0; i < 1000; i++ {
		urls = append(urls, fmt.Sprintf("http://www.site%d.example/section/%d/article-%d.html", i%13, i%40, i))
	}
	b := EncodeLinks(urls)
	got, err := DecodeLinks(b, len(urls))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(urls))
	if !slices.Equal(got, want) {
		t.Fatal("round trip changed the URLs")
	}
	raw := len(strings.Join(urls, ""))
	if ratio := float64(len(b)) / float64(raw); ratio > 0.5 {
		t.Fatalf("compressed to %.2f of the URL bytes; expected much better on repetitive URLs", ratio)
	}
	if _, err := DecodeLinks(b, len(urls)+1); err == nil {
		t.Fatal("count mismatch accepted")
	}
	if _, err := DecodeLinks([]byte("not zstd"), 1); err == nil {
		t.Fatal("garbage accepted")
	}
	if _, err := DecodeLinks(EncodeLinks(nil), 0); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
}

func TestLinksCodecRefusesBombs(t *testing.T) {
	bomb := zenc.EncodeAll(bytes.Repeat([]byte("a"), maxLinksExpanded+1), nil)
	if _, err := DecodeLinks(bomb, 1); err == nil {
		t.Fatal("decompression bomb accepted")
	}
	if _, err := DecodeLinks(EncodeLinks([]string{"x"}), maxLinksPerBatch+1); err == nil {
		t.Fatal("oversized count accepted")
	}
}

func FuzzDecodeLinks(f *testing.F) {
	f.Add(EncodeLinks([]string{"http://a.example/", "http://b.example/x"}), 2)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		urls, err := DecodeLinks(b, n)
		if err == nil && len(urls) != n && !(n == 0 && urls == nil) {
			t.Fatalf("decoded %d URLs, header said %d", len(urls), n)
		}
	})
}
