package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestOpenBodyZstd: a record of a .warc.zst segment is not streamed (its
// frame's window is its whole content): ErrNotStreamable, and Read still
// reads it.
func TestOpenBodyZstd(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true, DictSamples: 40})
	pages := benchPages(41)
	var v Version
	for i := range 41 {
		if i == 40 {
			s.trainer.wait() // the dictionary is trained in the background
		}
		var err error
		if v, _, err = s.Put(ctx, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasSuffix(v.File, zstExt) {
		t.Fatalf("record 41 in %s, want a .warc.zst segment", v.File)
	}
	if _, err := s.OpenBody(ctx, v); !errors.Is(err, ErrNotStreamable) {
		t.Fatalf("open body of a zstd record: %v, want ErrNotStreamable", err)
	}
	if _, err := s.Read(ctx, v); err != nil {
		t.Fatal(err)
	}
}
