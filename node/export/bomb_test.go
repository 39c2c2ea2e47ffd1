package export

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
)

// TestCheckRecordBomb: a member's record whose gzip member expands to
// 200 MiB, declaring as much, is refused before its block is read: the
// check allocates a few MiB, not the 200 the record declares.
func TestCheckRecordBomb(t *testing.T) {
	const declared = 200 << 20
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	fmt.Fprintf(zw, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/\r\nWARC-Date: 2026-11-28T12:00:00Z\r\nContent-Length: %d\r\n\r\n", declared)
	if _, err := io.CopyN(zw, zeros{}, declared); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	body := buf.Bytes()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := checkRecord(body, recordHeader{URL: "http://example.org/", Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}, false)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 200 MiB record passed the check")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("checking a %d-byte bomb allocated %d MiB", len(body), alloc>>20)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
