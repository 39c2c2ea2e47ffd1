package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// gzipped returns parts as one gzip member.
func gzipped(parts ...[]byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	for _, p := range parts {
		zw.Write(p)
	}
	zw.Close()
	return b.Bytes()
}

// allocatedBy returns the bytes f allocates (MemStats.TotalAlloc).
func allocatedBy(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestImportBombs: records from a peer that declare a large length, or
// expand to much, are refused having allocated little, whatever they
// claim: the block grows as its bytes arrive, and decompression stops at
// Options.MaxBody plus MaxHead (its buffers, doubling, allocate a few
// times that in all, more under -race; before, the declared length was
// allocated at once, and 64 MiB of header lines were read). An honest record within MaxBody imports;
// one over it is refused.
func TestImportBombs(t *testing.T) {
	ctx := context.Background()
	const maxBody = 1 << 20
	s := openTest(t, Options{MaxBody: maxBody})
	unbounded := openTest(t, Options{})
	name, honest := putFile(t, nil, capture("http://example.org/big", t0, strings.Repeat("x", 512<<10)))
	if _, added, err := s.Import(ctx, name, honest); err != nil || !added {
		t.Fatalf("honest record of 512 KiB: %v, added %v", err, added)
	}
	_, over := putFile(t, nil, capture("http://example.org/over", t0, strings.Repeat("y", maxBody+MaxHead)))
	head := func(n int64) []byte {
		return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/\r\nContent-Length: %d\r\n\r\n", n)
	}
	zeros := make([]byte, 64<<20)
	line := append([]byte("X-Pad: "), append(bytes.Repeat([]byte("a"), 8<<10), "\r\n"...)...)
	cases := []struct {
		name  string
		store *Store
		data  []byte
		bound uint64 // bytes Import may allocate
	}{
		{"a record over MaxBody", s, over, 4 << 20},
		{"declares 200 MB, holds 1 KiB (no MaxBody)", unbounded, gzipped(head(200_000_000), zeros[:1<<10]), 2 << 20},
		{"declares 200 MB, holds 1 KiB", s, gzipped(head(200_000_000), zeros[:1<<10]), 2 << 20},
		{"64 MiB of zeros, declared", s, gzipped(head(64<<20), zeros, []byte("\r\n\r\n")), 2 << 20},
		{"64 MiB of header lines", s, gzipped([]byte("WARC/1.1\r\n"), bytes.Repeat(line, 8000)), 16 << 20},
		{"64 MiB after a short record", s, gzipped(head(2), []byte("ab\r\n\r\n"), zeros), 2 << 20},
	}
	// The bombs come under a name the stores do not hold: a held name is
	// answered before its bytes are decoded.
	bomb, _ := putFile(t, nil, capture("http://example.org/bomb", t0, "b"))
	for _, c := range cases {
		var err error
		got := allocatedBy(func() { _, _, err = c.store.Import(ctx, bomb, c.data) })
		t.Logf("%s (%d KiB gzip): %d KiB allocated, bound %d KiB; %v", c.name, len(c.data)>>10, got>>10, c.bound>>10, err)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", c.name, err)
		}
		if got > c.bound {
			t.Errorf("%s: %d bytes allocated, bound %d", c.name, got, c.bound)
		}
	}
}
