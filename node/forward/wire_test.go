package forward

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/internal/canon"
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

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestLinksBombAllocation: a batch that declares one URL but expands to
// 64 MiB (a zstd frame of a few KiB that states its 64 MiB content size)
// is refused having allocated little: the output is cut at what one URL
// may take, before it is allocated. The control: an honest batch of
// 500,000 URLs (the most one may hold, 29 MiB expanded) still decodes.
func TestLinksBombAllocation(t *testing.T) {
	bomb := zenc.EncodeAll(bytes.Repeat([]byte("a"), maxLinksExpanded), nil)
	DecodeLinks(EncodeLinks([]string{"http://a.example/"}), 1) // the pool's first decoder, before the measure
	var err error
	got := allocated(func() { _, err = DecodeLinks(bomb, 1) })
	if err == nil {
		t.Fatal("bomb accepted")
	}
	t.Logf("a %d-byte bomb declaring %d MiB: refused, %d KiB allocated", len(bomb), maxLinksExpanded>>20, got>>10)
	if got > 1<<20 {
		t.Errorf("decoding a bomb allocated %d bytes, bound 1 MiB", got)
	}
	// A streamed frame states no content size: the output is cut at the
	// limit n URLs allow, and memory follows it.
	var sb bytes.Buffer
	zw, _ := zstd.NewWriter(&sb, zstd.WithWindowSize(1<<10), zstd.WithEncoderConcurrency(1))
	zw.Write(bytes.Repeat([]byte("a"), maxLinksExpanded))
	zw.Close()
	for _, n := range []int{1, 1000} {
		got := allocated(func() { _, err = DecodeLinks(sb.Bytes(), n) })
		limit := uint64(n) * (canon.MaxLen + 1)
		t.Logf("a %d-byte streamed bomb of %d MiB as %d URLs: %v; %d KiB allocated, the limit %d KiB", sb.Len(), maxLinksExpanded>>20, n, err, got>>10, limit>>10)
		if err == nil || got > 3*limit+1<<20 {
			t.Errorf("streamed bomb as %d URLs: %v, %d bytes allocated, bound %d", n, err, got, 3*limit+1<<20)
		}
	}
	urls := make([]string, maxLinksPerBatch)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://www.site%d.example/section/%d/article-%d.html", i%97, i%40, i)
	}
	b := EncodeLinks(urls)
	out, err := DecodeLinks(b, len(urls))
	if err != nil || len(out) != len(urls) {
		t.Fatalf("the largest honest batch (%d bytes compressed): %d URLs, %v", len(b), len(out), err)
	}
}
