package archive

import (
	"bufio"
	"bytes"
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

	"github.com/klauspost/compress/gzip"
)

// testDictRaw is a dictionary trained on benchPages, built once.
var testDictRaw = sync.OnceValue(func() []byte {
	zd, err := trainDict(benchPages(40))
	if err != nil {
		panic(err)
	}
	raw, _, err := readDictFrame(bytes.NewReader(zd.frame()), int64(len(zd.frame())))
	if err != nil {
		panic(err)
	}
	return raw
})

// testDictFrame returns the dictionary frame of testDictRaw, framed once.
var testDictFrame = sync.OnceValue(func() []byte {
	zd, err := newZdict(testDictRaw())
	if err != nil {
		panic(err)
	}
	return zd.frame()
})

// withDict gives s the test dictionary, as if it had trained it: the
// next record goes to a new .warc.zst segment.
func withDict(t testing.TB, s *Store) *zdict {
	t.Helper()
	zd, err := newZdict(testDictRaw())
	must(t, err)
	must(t, s.adoptTrained(zd))
	return s.zd.Load()
}

// asStored returns the gzip member gz as a peer whose dictionary is zd
// sends it (ReadStored): the record compressed with zd behind the frame
// naming zd.
func asStored(t testing.TB, zd *zdict, gz []byte) []byte {
	t.Helper()
	var raw bytes.Buffer
	_, err := decodeMemberTo(gz, &raw)
	must(t, err)
	return zd.encoder().EncodeAll(raw.Bytes(), appendRefFrame(nil, zd.ref()))
}

// segmentFiles counts the store's .warc.gz and .warc.zst segments.
func segmentFiles(t testing.TB, dir string) (gz, zst int) {
	t.Helper()
	refs, err := listSegments(dir)
	must(t, err)
	for _, r := range refs {
		if r.zst {
			zst++
		} else {
			gz++
		}
	}
	return gz, zst
}

// TestDictSegments: a store writes gzip records until it has trained its
// dictionary on its first records, then .warc.zst segments whose records
// are smaller (the made-up pages share little; real sites share more:
// BenchmarkZstdDict); every version reads back, across a reopen (which finds the
// dictionary in the newest segment), Fsck and Reindex; ReadFile hands out
// gzip members that other stores import, with or without a dictionary;
// an export is a .warc.gz of every version.
func TestDictSegments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{NoSync: true, DictSamples: 40}
	s, err := Open(dir, o)
	must(t, err)
	pages := benchPages(80)
	var vs []Version
	put := func(i int) {
		v, added, err := s.Put(ctx, benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second)))
		if err != nil || !added {
			t.Fatalf("put %d: %v %v", i, added, err)
		}
		vs = append(vs, v)
	}
	for i := range 40 {
		put(i)
	}
	s.trainer.wait() // trained in the background from the 40th record on
	zd := s.zd.Load()
	if zd == nil {
		t.Fatal("no dictionary after 40 records")
	}
	for i := 40; i < 80; i++ {
		put(i)
	}
	var gzBytes, zstBytes, gzPayload, zstPayload int64
	for _, v := range vs {
		if strings.HasSuffix(v.File, zstExt) {
			zstBytes, zstPayload = zstBytes+v.Size, zstPayload+v.Length
		} else {
			gzBytes, gzPayload = gzBytes+v.Size, gzPayload+v.Length
		}
	}
	if zstBytes == 0 || gzBytes == 0 {
		t.Fatalf("gzip records %d bytes, zstd %d: want both", gzBytes, zstBytes)
	}
	gzRatio, zstRatio := float64(gzBytes)/float64(gzPayload), float64(zstBytes)/float64(zstPayload)
	t.Logf("bytes per payload byte: gzip %.3f, zstd with dictionary %.3f", gzRatio, zstRatio)
	if zstRatio >= gzRatio {
		t.Fatalf("zstd with dictionary %.3f bytes per payload byte, gzip %.3f: want less", zstRatio, gzRatio)
	}
	if gz, zst := segmentFiles(t, dir); gz != 1 || zst != 1 {
		t.Fatalf("%d .warc.gz and %d .warc.zst segments, want 1 and 1", gz, zst)
	}
	readAll := func(s *Store) {
		t.Helper()
		for i, v := range vs {
			_, c, err := s.Get(ctx, v.URL, v.Time)
			if err != nil || !bytes.Equal(c.Body, pages[i%len(pages)]) {
				t.Fatalf("read %s: %v", v.URL, err)
			}
		}
	}
	readAll(s)
	must(t, s.Close())

	s, err = Open(dir, o)
	must(t, err)
	if got := s.zd.Load(); got == nil || got.id != zd.id {
		t.Fatalf("reopened store's dictionary %v, want id %d", got, zd.id)
	}
	readAll(s)
	put(80)
	if !strings.HasSuffix(vs[80].File, zstExt) {
		t.Fatalf("record after reopening went to %s", vs[80].File)
	}

	// Gateway reads and exports: a gzip member out, imported as it is by
	// stores with and without a dictionary.
	plain := openTest(t, Options{NoSync: true, DictSamples: -1})
	dict := openTest(t, Options{NoSync: true})
	withDict(t, dict)
	for _, v := range vs[70:] {
		data, err := s.ReadFile(ctx, v.Entry())
		must(t, err)
		if _, err := decodeMember(data); err != nil {
			t.Fatalf("ReadFile of %s: not a gzip record: %v", v.File, err)
		}
		for _, dst := range []*Store{plain, dict} {
			got, added, err := dst.Import(ctx, v.Entry().Name(), data)
			if err != nil || !added || got.Entry() != v.Entry() {
				t.Fatalf("import %s: %v %v", v.URL, added, err)
			}
			if _, err := dst.Read(ctx, got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if gz, zst := segmentFiles(t, plain.Dir()); gz != 1 || zst != 0 {
		t.Fatalf("store without a dictionary: %d .warc.gz, %d .warc.zst", gz, zst)
	}
	if gz, zst := segmentFiles(t, dict.Dir()); gz != 1 || zst != 0 {
		t.Fatalf("store with a dictionary: %d .warc.gz, %d .warc.zst", gz, zst)
	}

	// Export: one gzip member per record, every version.
	var warc, cdxj bytes.Buffer
	responses := 0
	for h := range 13 { // benchCapture's hosts
		st, err := s.Export(ctx, ExportOptions{Query: Query{Host: fmt.Sprintf("h%d.example", h)}}, &warc, &cdxj)
		must(t, err)
		responses += st.Responses
	}
	if n := countMembers(t, warc.Bytes()); n != len(vs) || responses != len(vs) {
		t.Fatalf("export: %d records (%d responses), want %d", n, responses, len(vs))
	}
	must(t, s.Close())

	for _, check := range []func(context.Context, string, Options) (Report, error){Fsck, Reindex, Fsck} {
		rep, err := check(ctx, dir, o)
		if err != nil || !rep.OK() || rep.Versions != len(vs) {
			t.Fatalf("fsck/reindex: %+v %v", rep, err)
		}
	}
	s, err = Open(dir, o)
	must(t, err)
	readAll(s)
	must(t, s.Close())
}

// countMembers reads data as gzip members of one WARC record each and
// returns how many there are.
func countMembers(t *testing.T, data []byte) int {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(data))
	n := 0
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return n
		}
		zr, err := gzip.NewReader(br)
		must(t, err)
		zr.Multistream(false)
		if _, err := ReadRecord(bufio.NewReader(zr)); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		n++
	}
}

// TestDictSegmentDamage: a damaged record in a .warc.zst segment costs that
// record only: Fsck reports it, Reindex resumes at the next frame, and
// the other versions read back. A damaged dictionary frame costs the
// segment, which Reindex quarantines.
func TestDictSegmentDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{NoSync: true}
	s, err := Open(dir, o)
	must(t, err)
	withDict(t, s)
	pages := benchPages(10)
	var vs []Version
	for i, p := range pages {
		v, _ := mustPut(t, s, benchCapture(i, p, t0))
		vs = append(vs, v)
	}
	must(t, s.Close())
	bad := vs[4]
	path := filepath.Join(dir, filepath.FromSlash(bad.File))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt([]byte{0xff, 0xfe, 0xfd, 0xfc}, bad.Offset+bad.Size/2)
	must(t, err)
	must(t, f.Close())

	rep, err := Fsck(ctx, dir, o)
	must(t, err)
	if rep.OK() || len(rep.Corrupt) != 1 || rep.Versions != len(vs)-1 {
		t.Fatalf("fsck of a damaged record: %+v", rep)
	}
	if rep, err = Reindex(ctx, dir, o); err != nil || rep.Versions != len(vs)-1 {
		t.Fatalf("reindex: %+v %v", rep, err)
	}
	s, err = Open(dir, o)
	must(t, err)
	for _, v := range vs {
		_, _, err := s.Get(ctx, v.URL, t0)
		if v == bad {
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("damaged version: %v", err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", v.URL, err)
		}
	}
	must(t, s.Close())

	// A damaged dictionary frame: the store opens, the segment's records
	// fail their reads, and Reindex quarantines the segment.
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("damaged!"), 12)
	must(t, err)
	must(t, f.Close())
	s, err = Open(dir, o)
	must(t, err)
	if _, _, err := s.Get(ctx, vs[0].URL, t0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read from a segment with a damaged dictionary: %v", err)
	}
	must(t, s.Close())
	if rep, err = Reindex(ctx, dir, o); err != nil || rep.Versions != 0 || len(rep.Corrupt) != 1 {
		t.Fatalf("reindex of a segment with a damaged dictionary: %+v %v", rep, err)
	}
	// The quarantine holds the whole segment (cut at 0) and, from the
	// first reindex, the copy of the damaged record.
	if q, _ := filepath.Glob(filepath.Join(dir, "quarantine", "*.warc.zst.0")); len(q) != 1 {
		t.Fatalf("quarantine holds %v, want the segment cut at 0", q)
	}
}

// FuzzZstdFrameEnd: the frame walker never panics on arbitrary bytes and
// reports an end within them; on a real frame it finds the frame's end.
func FuzzZstdFrameEnd(f *testing.F) {
	zd, err := newZdict(testDictRaw())
	must(f, err)
	frame := zd.encoder().EncodeAll(benchPages(1)[0], nil)
	f.Add(frame)
	f.Add(frame[:len(frame)/2])
	f.Add(append(frame, frame...))
	f.Fuzz(func(t *testing.T, data []byte) {
		end, _, err := zstdFrameEnd(bytes.NewReader(data), 0, int64(len(data)))
		if err == nil && (end <= 0 || end > int64(len(data))) {
			t.Fatalf("end %d of %d bytes", end, len(data))
		}
		if bytes.HasPrefix(data, frame) && (err != nil || end != int64(len(frame))) {
			t.Fatalf("real frame: end %d, %v", end, err)
		}
	})
}

// FuzzRefFrame: the dictionary reference a peer's record starts with,
// and a zstd frame's stated size, parse any input without panicking.
func FuzzRefFrame(f *testing.F) {
	zd, err := newZdict(testDictRaw())
	if err != nil {
		f.Fatal(err)
	}
	rec := zd.encoder().EncodeAll([]byte("WARC/1.1\r\n\r\n"), appendRefFrame(nil, zd.ref()))
	f.Add(rec)
	f.Add(rec[:refFrameLen+3])
	f.Add([]byte{0x5e, 0x2a, 0x4d, 0x18, 24, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ref, rest, ok, err := splitRefFrame(data)
		if ok && (err != nil || len(rest) != len(data)-refFrameLen) {
			t.Fatalf("ref %v: %d bytes left of %d, %v", ref, len(rest), len(data), err)
		}
		if n, ok := frameContentSize(rest); ok && bytes.Equal(data, rec) && n != uint64(len("WARC/1.1\r\n\r\n")) {
			t.Fatalf("stated size %d", n)
		}
	})
}

// BenchmarkReadFile measures, per record of 10-30 KB pages, what sending
// a record costs (ReadFile: read, verify, and for a .warc.zst segment
// decompress and gzip again, as gateway reads and exports do;
// ReadStored: read and verify, as replication does) and what Import
// costs the receiver (verify, store as received): gzip is a store
// without a dictionary, dict one with; dict/import takes ReadFile's gzip
// members, dict/importstored ReadStored's frames.
func BenchmarkReadFile(b *testing.B) {
	pages := benchPages(256)
	ctx := context.Background()
	for _, dict := range []bool{false, true} {
		name := "gzip"
		if dict {
			name = "dict"
		}
		s := openTest(b, Options{NoSync: true, DictSamples: -1})
		if dict {
			withDict(b, s)
		}
		var es []Entry
		for i := range 2048 {
			v, _ := mustPut(b, s, benchCapture(i, pages[i%len(pages)], t0))
			es = append(es, v.Entry())
		}
		var files, stored [][]byte
		for _, e := range es {
			data, err := s.ReadFile(ctx, e)
			must(b, err)
			files = append(files, data)
			data, err = s.ReadStored(ctx, e)
			must(b, err)
			stored = append(stored, data)
		}
		b.Run(name+"/readfile", func(b *testing.B) {
			cpu0 := cpuTime()
			for i := range b.N {
				if _, err := s.ReadFile(ctx, es[i%len(es)]); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, "records", cpu0)
		})
		b.Run(name+"/import", func(b *testing.B) {
			if b.N > len(files) {
				b.Skipf("at most %d records", len(files))
			}
			dst := openTest(b, Options{NoSync: true, DictSamples: -1})
			if dict {
				withDict(b, dst)
			}
			cpu0 := cpuTime()
			for i := range b.N {
				if _, _, err := dst.Import(ctx, es[i].Name(), files[i]); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, "records", cpu0)
		})
		if !dict {
			continue // a gzip store's stored records are its gzip members
		}
		// Replication as it is: the records as stored, imported as they
		// are by a replica holding the sender's dictionary.
		b.Run(name+"/readstored", func(b *testing.B) {
			cpu0 := cpuTime()
			for i := range b.N {
				if _, err := s.ReadStored(ctx, es[i%len(es)]); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, "records", cpu0)
		})
		b.Run(name+"/importstored", func(b *testing.B) {
			if b.N > len(stored) {
				b.Skipf("at most %d records", len(stored))
			}
			dst := openTest(b, Options{NoSync: true, DictSamples: -1})
			ref, _ := s.OwnDictionary()
			raw, err := s.Dictionary(ref)
			must(b, err)
			must(b, dst.AddDictionary(ref, raw))
			cpu0 := cpuTime()
			for i := range b.N {
				if _, _, err := dst.Import(ctx, es[i].Name(), stored[i]); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, "records", cpu0)
		})
	}
}
