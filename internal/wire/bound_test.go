package wire

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAll: a reader within the limit is read whole (also one byte at
// a time); one past it fails with ErrTooLarge; a size hint is a first
// buffer, not a bound.
func TestReadAll(t *testing.T) {
	in := bytes.Repeat([]byte("0123456789"), 10_000)
	for _, size := range []int64{0, 10, int64(len(in)), 1 << 30} {
		got, err := ReadAllSized(iotest.OneByteReader(bytes.NewReader(in)), int64(len(in)), size)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("size %d: %d bytes, %v", size, len(got), err)
		}
		if cap(got) > 2*len(in)+growStep {
			t.Fatalf("size %d: capacity %d for %d bytes", size, cap(got), len(in))
		}
	}
	if _, err := ReadAll(bytes.NewReader(in), int64(len(in))-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte over: %v", err)
	}
	if got, err := ReadAll(strings.NewReader(""), 0); err != nil || len(got) != 0 {
		t.Fatalf("empty: %q %v", got, err)
	}
}

// TestLimitReader: reading up to the limit succeeds, past it fails with
// ErrTooLarge rather than a quiet end.
func TestLimitReader(t *testing.T) {
	if b, err := io.ReadAll(LimitReader(strings.NewReader("abc"), 3)); err != nil || string(b) != "abc" {
		t.Fatalf("at the limit: %q %v", b, err)
	}
	if _, err := io.ReadAll(LimitReader(strings.NewReader("abcd"), 3)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("past the limit: %v", err)
	}
}

// TestReadAllAllocation: a reader that would deliver 64 MiB against a
// limit of 1 MiB costs about twice the limit in all (its doubling
// buffers), not the 64 MiB.
func TestReadAllAllocation(t *testing.T) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := ReadAll(io.LimitReader(zeroReader{}, 64<<20), 1<<20)
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("64 MiB against 1 MiB: %v", err)
	}
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 3<<20 {
		t.Fatalf("%d bytes allocated, bound 3 MiB", got)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
