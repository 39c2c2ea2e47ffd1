package archive

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// TestOpenBody: a stored payload streams back byte for byte with its
// status, header and size; a damaged record fails, at OpenBody or at the
// end of the payload, with ErrCorrupt.
func TestOpenBody(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	payload := strings.Repeat("<p>a long streamed page</p>\n", 40000) // ~1.1 MB
	v, _ := mustPut(t, s, capture("http://a.example/", t0, payload))
	b, err := s.OpenBody(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := b.Peek(3); err != nil || string(p) != "<p>" {
		t.Fatalf("peek %q %v", p, err)
	}
	got, err := io.ReadAll(b)
	b.Close()
	if err != nil || string(got) != payload || b.Size != int64(len(payload)) || b.Status != 200 ||
		b.Header.Get("Content-Type") == "" || !b.Time.Equal(v.Time) {
		t.Fatalf("streamed %d bytes (size %d, status %d, header %v), %v; want %d", len(got), b.Size, b.Status, b.Header, err, len(payload))
	}

	orig, err := s.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), v.File)
	flip := func(at int) []byte {
		d := bytes.Clone(orig)
		d[at] ^= 1
		return d
	}
	for name, data := range map[string][]byte{
		"flipped payload byte": flip(len(orig) / 2),
		"flipped checksum":     flip(len(orig) - 6),
		"flipped head byte":    flip(30),
	} {
		t.Run(name, func(t *testing.T) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteAt(data, v.Offset)
			must(t, err)
			must(t, f.Close())
			b, err := s.OpenBody(ctx, v)
			if err == nil {
				_, err = io.Copy(io.Discard, b)
				b.Close()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("stream = %v, want ErrCorrupt", err)
			}
		})
	}
	gone := v
	gone.File = segmentRel(99)
	if _, err := s.OpenBody(ctx, gone); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing segment: %v", err)
	}
	remote := v
	remote.File = ""
	if _, err := s.OpenBody(ctx, remote); !errors.Is(err, ErrNotStreamable) {
		t.Fatalf("a version without a file: %v", err)
	}
}

// zstdStore returns a store whose next records go to a .warc.zst
// segment (its dictionary trained on 40 pages).
func zstdStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true, DictSamples: 40})
	pages := benchPages(40)
	for i := range 40 {
		if _, _, err := s.Put(ctx, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	s.trainer.wait() // the dictionary is trained in the background
	return s
}

// largePage returns n bytes of a page that compresses about 4:1 and
// repeats nothing within a megabyte.
func largePage(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "<li id=r%d>row %d of %x</li>\n", i, i*7919%104729, i*2654435761)
	}
	return b.String()[:n]
}

// TestOpenBodyZstd: a record of a .warc.zst segment streams byte for byte,
// holding about its frame's window (256 KiB) rather than its 9 MiB; a
// damaged one fails with ErrCorrupt.
func TestOpenBodyZstd(t *testing.T) {
	ctx := context.Background()
	s := zstdStore(t)
	small, _ := mustPut(t, s, capture("http://a.example/small", t0.Add(time.Hour), "<p>small</p>"))
	payload := largePage(9 << 20)
	v, _ := mustPut(t, s, capture("http://a.example/large", t0.Add(time.Hour), payload))
	if !strings.HasSuffix(v.File, zstExt) || !strings.HasSuffix(small.File, zstExt) {
		t.Fatalf("records in %s and %s, want a .warc.zst segment", small.File, v.File)
	}
	for _, c := range []struct {
		v    Version
		want string
	}{{small, "<p>small</p>"}, {v, payload}, {v, payload}} {
		buf := make([]byte, 32<<10)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b, err := s.OpenBody(ctx, c.v)
		if err != nil {
			t.Fatal(err)
		}
		got := sha1.New()
		n, err := io.CopyBuffer(got, b, buf)
		b.Close()
		b.Close()
		runtime.ReadMemStats(&after)
		if want := sha1.Sum([]byte(c.want)); err != nil || !bytes.Equal(got.Sum(nil), want[:]) || n != int64(len(c.want)) || b.Size != n {
			t.Fatalf("streamed %d bytes (size %d), %v; want %d", n, b.Size, err, len(c.want))
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d bytes streamed, %.2f MiB allocated", n, float64(alloc)/(1<<20))
		if alloc > 3<<20 {
			t.Errorf("streaming a %d-byte record allocated %d bytes", n, alloc)
		}
	}

	orig, err := os.ReadFile(filepath.Join(s.Dir(), v.File))
	must(t, err)
	rec := orig[v.Offset : v.Offset+v.Size]
	for name, at := range map[string]int64{"payload byte": v.Size / 2, "checksum": v.Size - 2, "header": 5} {
		t.Run(name, func(t *testing.T) {
			d := bytes.Clone(rec)
			d[at] ^= 0x40
			f, err := os.OpenFile(filepath.Join(s.Dir(), v.File), os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteAt(d, v.Offset)
			must(t, err)
			must(t, f.Close())
			b, err := s.OpenBody(ctx, v)
			if err == nil {
				_, err = io.Copy(io.Discard, b)
				b.Close()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("stream = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestOpenBodyZstdWideFrame: a record in a frame whose window is its whole
// content (as written before frames had a 256 KiB window) is not streamed:
// ErrNotStreamable, and Read still reads it.
func TestOpenBodyZstdWideFrame(t *testing.T) {
	ctx := context.Background()
	s := zstdStore(t)
	zd := s.zd.Load()
	zd.encOnce.Do(func() {})
	wide, err := zstd.NewWriter(nil, zstd.WithEncoderDict(zd.raw), zstd.WithEncoderLevel(zstd.SpeedFastest))
	must(t, err)
	zd.enc = wide
	payload := largePage(3 << 20)
	v, _ := mustPut(t, s, capture("http://a.example/wide", t0.Add(time.Hour), payload))
	if _, err := s.OpenBody(ctx, v); !errors.Is(err, ErrNotStreamable) {
		t.Fatalf("open body of a wide frame: %v, want ErrNotStreamable", err)
	}
	if c, err := s.Read(ctx, v); err != nil || string(c.Body) != payload {
		t.Fatalf("read a wide frame: %v", err)
	}
}

// TestParseFrameHead: the window and content size each encoder states.
func TestParseFrameHead(t *testing.T) {
	for _, c := range []struct {
		window, n  int
		single     bool
		wantWindow uint64
	}{
		{256 << 10, 1000, false, 1 << 10}, // too small for a single segment
		{256 << 10, 200 << 10, true, 200 << 10},
		{256 << 10, 3 << 20, false, 256 << 10},
		{8 << 20, 3 << 20, true, 3 << 20},
	} {
		enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(c.window))
		must(t, err)
		frame := enc.EncodeAll([]byte(largePage(c.n)), nil)
		fh, err := parseFrameHead(frame)
		if err != nil || fh.single != c.single || fh.window != c.wantWindow || !fh.sized || fh.size != uint64(c.n) {
			t.Errorf("window %d, %d bytes: %+v %v; want single %v window %d", c.window, c.n, fh, err, c.single, c.wantWindow)
		}
	}
	if _, err := parseFrameHead([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x08, 0}); err == nil {
		t.Error("a reserved bit was accepted")
	}
}
