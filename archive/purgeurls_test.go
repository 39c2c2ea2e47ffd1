package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// takedownStore fills dir with pages of example.com (private and public)
// and example.org over two days, in segments of 16 KiB, and returns the
// URLs of the private pages.
func takedownStore(t *testing.T, dir string, o Options) {
	t.Helper()
	o.NoSync = true
	s, err := Open(dir, o)
	must(t, err)
	for i := range 40 {
		at := t0.Add(time.Duration(i) * time.Minute)
		if i%2 == 1 {
			at = at.Add(-48 * time.Hour)
		}
		for _, u := range []string{"http://example.com/private/%d", "http://www.example.com/public/%d", "http://example.org/private/%d"} {
			u = fmt.Sprintf(u, i)
			mustPut(t, s, capture(u, at, "<html>"+strings.Repeat("body of "+u+" ", 40)+"</html>"))
		}
	}
	must(t, s.Close())
}

// segmentText returns the decompressed text of every segment in dir.
func segmentText(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, segmentsDir))
	must(t, err)
	var all bytes.Buffer
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, segmentsDir, e.Name()))
		must(t, err)
		if r, err := parseSegment(e.Name()); err == nil && r.zst {
			raw, frame, err := readDictFrame(bytes.NewReader(b), int64(len(b)))
			must(t, err)
			dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(raw))
			must(t, err)
			out, err := dec.DecodeAll(b[len(frame):], nil)
			dec.Close()
			must(t, err)
			all.Write(out)
			continue
		}
		if len(b) == 0 {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		must(t, err)
		out, err := io.ReadAll(zr)
		must(t, err)
		all.Write(out)
	}
	return all.String()
}

// TestPurgeURLs purges a SURT prefix within a date window from an open
// store while readers run: the covered versions leave the index and
// their bytes the segments, the others read back, Put and Import refuse
// covered captures, a second purge does nothing, a reopen keeps all of
// it, Fsck agrees, and Unpurge lets captures in again (the removed ones
// do not return).
func TestPurgeURLs(t *testing.T) {
	for _, dict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dict=%v", dict), func(t *testing.T) { testPurgeURLs(t, dict) })
	}
}

func testPurgeURLs(t *testing.T, dict bool) {
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{SegmentSize: 16 << 10, DictSamples: -1}
	if dict {
		o.DictSamples = 8
	}
	takedownStore(t, dir, o)
	if !strings.Contains(segmentText(t, dir), "body of http://example.com/private/3 ") {
		t.Fatal("the pages are not in the segments before the purge")
	}
	s, err := Open(dir, o)
	must(t, err)
	defer s.Close()
	before := s.Stats()
	p := URLPurge{ID: "r1", SURT: "com,example)/private", Before: t0.Add(-time.Hour)}
	// The odd pages are two days old: only they are in the window.
	covered := func(i int) bool { return i%2 == 1 }

	// Readers of the pages that stay run through the purge.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	readErr := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i = (i + 4) % 40 {
				select {
				case <-stop:
					return
				default:
				}
				u := fmt.Sprintf("http://example.org/private/%d", i)
				vs, err := s.Versions(ctx, u)
				if err == nil && len(vs) != 1 {
					err = fmt.Errorf("%d versions", len(vs))
				}
				if err == nil {
					_, err = s.Read(ctx, vs[0])
				}
				if err != nil {
					readErr <- fmt.Errorf("%s: %w", u, err)
					return
				}
			}
		}()
	}
	// And a writer: Puts wait for the purge, which waits for them.
	writing := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := s.Put(ctx, capture(fmt.Sprintf("http://example.net/%d", i), t0, "written during the purge")); err != nil {
				readErr <- err
				return
			}
			if i == 20 {
				close(writing)
			}
		}
	}()
	<-writing
	n, err := s.PurgeURLs(ctx, p)
	close(stop)
	wg.Wait()
	must(t, err)
	select {
	case err := <-readErr:
		t.Fatalf("a read during the purge failed: %v", err)
	default:
	}
	if n != 20 {
		t.Fatalf("purged %d versions, want 20", n)
	}
	var written int64
	for i := 0; ; i++ {
		if vs, _ := s.Versions(ctx, fmt.Sprintf("http://example.net/%d", i)); len(vs) == 0 {
			break
		}
		written++
	}
	t.Logf("%d pages written during the purge", written)
	check := func(s *Store) {
		t.Helper()
		for i := range 40 {
			for _, u := range []string{"http://example.com/private/%d", "http://www.example.com/public/%d", "http://example.org/private/%d"} {
				u = fmt.Sprintf(u, i)
				vs, err := s.Versions(ctx, u)
				must(t, err)
				gone := covered(i) && strings.HasPrefix(u, "http://example.com/private/")
				if gone != (len(vs) == 0) {
					t.Fatalf("%s: %d versions, purged %v", u, len(vs), gone)
				}
				if has, err := s.HasVersion(u); err != nil || has == gone {
					t.Fatalf("%s: HasVersion %v, %v; purged %v", u, has, err, gone)
				}
				if !gone {
					if _, err := s.Read(ctx, vs[0]); err != nil {
						t.Fatalf("%s: %v", u, err)
					}
				}
			}
		}
		if st := s.Stats(); st.Versions-written != before.Versions-20 || st.URLs-written != before.URLs-20 {
			t.Fatalf("stats %+v after the purge, %+v before", st, before)
		}
	}
	check(s)
	text := segmentText(t, dir)
	for i := range 40 {
		if strings.Contains(text, fmt.Sprintf("body of http://example.com/private/%d ", i)) == covered(i) {
			t.Fatalf("page %d: its bytes in the segments: %v, purged %v", i, !covered(i), covered(i))
		}
	}
	// Put and Import refuse covered captures; others go in.
	_, _, err = s.Put(ctx, capture("http://example.com/private/x", t0.Add(-2*time.Hour), "again"))
	if !errors.Is(err, ErrPurged) || !errors.Is(err, ErrBadCapture) {
		t.Fatalf("put of a covered capture: %v", err)
	}
	mustPut(t, s, capture("http://example.com/private/x", t0, "newer than the window"))
	src := openTest(t, Options{NoSync: true})
	sv, _ := mustPut(t, src, capture("http://example.com/private/y", t0.Add(-3*time.Hour), "from a replica"))
	data, err := src.ReadFile(ctx, sv.Entry())
	must(t, err)
	if _, _, err := s.Import(ctx, sv.Entry().Name(), data); !errors.Is(err, ErrPurged) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("import of a covered record: %v", err)
	}
	if n, err := s.PurgeURLs(ctx, p); n != 0 || err != nil {
		t.Fatalf("second purge: %d %v", n, err)
	}
	before.Versions++ // the newer page
	before.URLs++
	must(t, s.Close())
	if rep, err := Fsck(ctx, dir, o); err != nil || !rep.OK() {
		t.Fatalf("fsck after the purge: %+v %v", rep, err)
	}
	s2, err := Open(dir, o)
	must(t, err)
	defer s2.Close()
	check(s2)
	if ps := s2.URLPurges(); len(ps) != 1 || !ps[0].same(p) {
		t.Fatalf("purges after reopen: %+v", ps)
	}
	if _, _, err := s2.Put(ctx, capture("http://example.com/private/z", t0.Add(-2*time.Hour), "again")); !errors.Is(err, ErrPurged) {
		t.Fatalf("put of a covered capture after reopen: %v", err)
	}
	must(t, s2.Unpurge("r1"))
	mustPut(t, s2, capture("http://example.com/private/z", t0.Add(-2*time.Hour), "after unpurge"))
	if vs, _ := s2.Versions(ctx, "http://example.com/private/1"); len(vs) != 0 {
		t.Fatalf("unpurge brought back %d versions", len(vs))
	}
}

// TestPurgeURLsExact purges one URL of a host: the others stay.
func TestPurgeURLsExact(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true})
	mustPut(t, s, capture("http://example.com/a", t0, "a"))
	mustPut(t, s, capture("http://example.com/ab", t0, "ab"))
	n, err := s.PurgeURLs(ctx, URLPurge{ID: "x", SURT: "com,example)/a", Exact: true})
	if err != nil || n != 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if vs, _ := s.Versions(ctx, "http://example.com/ab"); len(vs) != 1 {
		t.Fatalf("the longer URL lost its version: %d", len(vs))
	}
	if _, err := s.PurgeURLs(ctx, URLPurge{SURT: "com,"}); err == nil {
		t.Fatal("a purge without an id accepted")
	}
}

// TestPurgeURLsReindex: a purge recorded but not carried out (a crash
// after step 1) is honoured by Reindex: the covered records stay out of
// the rebuilt index.
func TestPurgeURLsReindex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{SegmentSize: 16 << 10, DictSamples: -1}
	takedownStore(t, dir, o)
	p := URLPurge{ID: "r", SURT: "com,example)/private"}
	must(t, appendPurged(dir, purgedRecord{Purge: &p}))
	if _, err := Reindex(ctx, dir, o); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, o)
	must(t, err)
	defer s.Close()
	for i := range 40 {
		vs, err := s.Versions(ctx, fmt.Sprintf("http://example.com/private/%d", i))
		must(t, err)
		kept, err := s.Versions(ctx, fmt.Sprintf("http://example.org/private/%d", i))
		must(t, err)
		if len(vs) != 0 || len(kept) != 1 {
			t.Fatalf("page %d after reindex: %d covered versions, %d others", i, len(vs), len(kept))
		}
	}
}

// TestPurgeURLsStream: a stream of a record opened before its segment is
// rewritten reads it whole; the old handle closes with the stream.
func TestPurgeURLsStream(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true, DictSamples: -1})
	mustPut(t, s, capture("http://example.com/private/a", t0, "taken down"))
	rnd := make([]byte, 256<<10) // incompressible: the stream reads the file after its head
	for i := range rnd {
		rnd[i] = "0123456789abcdef"[(i*7919+i/13*31)%16^(i>>9)%16]
	}
	kept := string(rnd)
	v, _ := mustPut(t, s, capture("http://example.org/kept", t0, kept))
	b, err := s.OpenBody(ctx, v)
	must(t, err)
	if n, err := s.PurgeURLs(ctx, URLPurge{ID: "s", SURT: "com,example)/private"}); n != 1 || err != nil {
		t.Fatalf("purged %d, %v", n, err)
	}
	got, err := io.ReadAll(b)
	must(t, err)
	must(t, b.Close())
	if string(got) != kept {
		t.Fatalf("the stream read %d bytes, want %d", len(got), len(kept))
	}
	if len(s.streams.n)+len(s.streams.retired) != 0 {
		t.Fatalf("stream handles left: %d counted, %d retired", len(s.streams.n), len(s.streams.retired))
	}
	nv, err := s.Versions(ctx, "http://example.org/kept")
	must(t, err)
	if nv[0].Offset >= v.Offset {
		t.Fatalf("the kept record did not move: offset %d, was %d", nv[0].Offset, v.Offset)
	}
}
