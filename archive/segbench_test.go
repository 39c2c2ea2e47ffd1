//go:build unix

package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/internal/sampleweb"
)

// duBytes returns the bytes allocated (du) to the files under dir.
func duBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// sampleWebPages returns the HTML pages of a sample web of n pages
// (internal/sampleweb: made-up prose, links, navigation, 2.5-27 KB) as
// captures of day 0, with the headers the web sends.
func sampleWebPages(tb testing.TB, n int) []Capture {
	tb.Helper()
	w := sampleweb.New(sampleweb.Config{Pages: n})
	if err := w.Start(context.Background()); err != nil {
		tb.Skipf("sample web: %v", err)
	}
	defer w.Close()
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	var out []Capture
	for i, u := range w.Reachable(0) {
		if !strings.HasSuffix(u, ".html") && !strings.HasSuffix(u, "/") {
			continue
		}
		st, body := w.Body(0, u)
		if st != 200 {
			continue
		}
		out = append(out, Capture{URL: u, Time: at.Add(time.Duration(i) * time.Millisecond), Status: 200, Body: body,
			Header: http.Header{
				"Content-Type":  {"text/html; charset=utf-8"},
				"Etag":          {fmt.Sprintf(`"%x"`, i)},
				"Last-Modified": {at.Add(-time.Hour).Format(http.TimeFormat)},
				"Server":        {"sampleweb"},
			}})
	}
	return out
}

// corpusPages returns up to n captures of the .html files of 2.5-100 KB
// under dir, in path order.
func corpusPages(tb testing.TB, dir string, n int) []Capture {
	tb.Helper()
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	var out []Capture
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") || len(out) >= n {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || len(data) < 2500 || len(data) > 100<<10 {
			return err
		}
		i := len(out)
		out = append(out, Capture{URL: "http://corpus.example/" + filepath.ToSlash(strings.TrimPrefix(p, dir)),
			Time: at.Add(time.Duration(i) * time.Millisecond), Status: 200, Body: data,
			Header: http.Header{
				"Content-Type":  {"text/html; charset=utf-8"},
				"Etag":          {fmt.Sprintf(`"%x"`, i)},
				"Last-Modified": {at.Add(-time.Hour).Format(http.TimeFormat)},
				"Server":        {"nginx/1.24.0"},
			}})
		return nil
	})
	if err != nil || len(out) == 0 {
		tb.Fatalf("corpus %s: %d pages, %v", dir, len(out), err)
	}
	return out
}

// BenchmarkSegmentDisk stores 3,300 HTML pages with syncs on — the .html
// files of 2.5-100 KB under HEROD_HTML_CORPUS if set (for example a Rust
// toolchain's documentation), else a 3,300-page sample web
// (internal/sampleweb: made-up words, which compress worse than real
// text) — then closes and reopens the store (so that the index holds
// tables, not its write-ahead log) and reports the bytes the whole data
// directory takes in allocated blocks (du, index included) per payload
// byte (alloc/html; target <= 0.27, WebBase), the records' bytes per
// payload byte (records/html), and the index's allocated bytes per
// version (index-bytes/version; target <= 150). "dict" is the default
// store (a zstd dictionary trained on the first 300 records, then
// .warc.zst segments), "gzip" one that never trains (DictSamples -1),
// each record its own gzip member. The floor under gzip's records/html is
// reported beside it: each page's payload gzipped alone at the store's
// level (payload-gzip/html) and the WARC and HTTP headers a record adds
// once compressed (header-bytes/record).
func BenchmarkSegmentDisk(b *testing.B) {
	var pages []Capture
	if dir := os.Getenv("HEROD_HTML_CORPUS"); dir != "" {
		pages = corpusPages(b, dir, 3300)
	} else {
		pages = sampleWebPages(b, 3300)
	}
	for _, mode := range []struct {
		name    string
		samples int
	}{{"gzip", -1}, {"dict", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				segmentDisk(b, pages, Options{DictSamples: mode.samples})
			}
		})
	}
}

func segmentDisk(b *testing.B, pages []Capture, o Options) {
	dir := b.TempDir()
	s, err := Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var payload int64
	for _, c := range pages {
		if _, _, err := s.Put(ctx, c); err != nil {
			b.Fatal(err)
		}
		payload += int64(len(c.Body))
	}
	st := s.Stats()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = Open(dir, o); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportMetric(float64(oneFileAlloc(b, s, dir))/float64(payload), "onefile-alloc/html")
	b.ReportMetric(float64(len(pages)), "pages")
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(duBytes(b, dir))/float64(payload), "alloc/html")
	b.ReportMetric(float64(st.Bytes)/float64(payload), "records/html")
	b.ReportMetric(float64(duBytes(b, filepath.Join(dir, "index")))/float64(st.Versions), "index-bytes/version")
	if o.DictSamples >= 0 {
		return
	}
	var alone int64
	for _, c := range pages {
		alone += int64(gzipLen(b, c.Body, DefaultGzipLevel))
	}
	b.ReportMetric(float64(alone)/float64(payload), "payload-gzip/html")
	b.ReportMetric(float64(st.Bytes-alone)/float64(st.Versions), "header-bytes/record")
}

// gzipLen returns the size of data as one gzip member at level.
func gzipLen(tb testing.TB, data []byte, level int) int {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Len()
}

// oneFileAlloc writes every record of s as a file of the one-file layout
// (objects/ab/cd/<name>.warc.gz, in a directory beside dir) and returns
// the allocated bytes of that tree: the baseline the segments replace,
// measured on the same file system in the same run (its goleveldb index,
// ~850 bytes a version, not included).
func oneFileAlloc(b *testing.B, s *Store, dir string) int64 {
	b.Helper()
	base := dir + ".onefile"
	defer os.RemoveAll(base)
	ctx := context.Background()
	err := s.Range(ctx, id0, id0, func(v Version) error {
		data, err := s.ReadFile(ctx, v.Entry())
		if err != nil {
			return err
		}
		p := filepath.Join(base, filepath.FromSlash(v.Entry().Path()))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return duBytes(b, base)
}

// BenchmarkAppendDurable measures the store's own work per durable
// addition, as WebBase's 6,100 additions/s did (its pages arrived
// compressed, unverified): 32 writers per core with syncs on, so every
// add is durable (its group's fsyncs done) when it returns. "ready"
// appends records already encoded — what a Put does once its record is
// hashed, signed and compressed on the CPU gate's workers: the segment
// pwrite, the index batch, the group commit. "import" is Import of the
// same records, the replication path, which also decompresses and hashes
// each to verify it. Run it with -cpu 1 for the one-core figure.
func BenchmarkAppendDurable(b *testing.B) {
	pages := benchPages(256)
	src := openTest(b, Options{NoSync: true, DictSamples: -1})
	ctx := context.Background()
	type rec struct {
		name string
		v    Version
		data []byte
	}
	var recs []rec
	for i := range 8192 {
		v, _, err := src.Put(ctx, benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second)))
		if err != nil {
			b.Fatal(err)
		}
		data, err := src.ReadFile(ctx, v.Entry())
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, rec{v.Entry().Name(), v, data})
	}
	ready := func(s *Store, r rec) error {
		v := r.v
		lk := &s.keyLocks[v.Key[len(v.Key)-1]]
		lk.Lock()
		defer lk.Unlock()
		_, err := s.newest(v.Key)
		first := errors.Is(err, ErrNotFound)
		if err != nil && !first {
			return err
		}
		giveUp := s.beginWrite()
		seg, err := s.store(&v, &record{data: r.data})
		if err != nil {
			giveUp()
			return err
		}
		return s.index(v, seg, first, nil, nil)
	}
	imp := func(s *Store, r rec) error {
		_, added, err := s.Import(ctx, r.name, r.data)
		if err == nil && !added {
			err = errors.New("not added")
		}
		return err
	}
	for _, mode := range []struct {
		name string
		add  func(*Store, rec) error
		sync bool
	}{{"ready/fsync", ready, true}, {"import/fsync", imp, true}, {"import/nosync", imp, false}} {
		b.Run(mode.name, func(b *testing.B) {
			if b.N > len(recs) {
				b.Fatalf("at most %d records", len(recs))
			}
			s := openTest(b, Options{NoSync: !mode.sync, DictSamples: -1})
			var next atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := mode.add(s, recs[next.Add(1)-1]); err != nil {
						b.Errorf("add: %v", err)
						return
					}
				}
			})
			reportRates(b, "adds", cpu0)
			b.ReportMetric(float64(b.N)/float64(max(groupCommits(s), 1)), "adds/group")
		})
	}
}

// BenchmarkLookupMillion measures dated lookup + verified read latency on
// a store of 1M versions (200,000 URLs, 5 versions each, small pages so
// that loading takes minutes, not hours): p50 and p99 over 20,000 random
// (URL, date) pairs; the index's allocated bytes per version; and how
// long Close and the reopening take (reopen-ms). It needs
// HEROD_BENCH_MILLION=1 (a few minutes and about 1 GB of disk).
func BenchmarkLookupMillion(b *testing.B) {
	if os.Getenv("HEROD_BENCH_MILLION") == "" {
		b.Skip("HEROD_BENCH_MILLION not set")
	}
	const urls, versions = 200_000, 5
	s := openTest(b, Options{NoSync: true})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	body := func(u, v int) []byte {
		return fmt.Appendf(nil, "<html><body><h1>page %d</h1><p>version %d %x</p></body></html>", u, v, rng.Uint64())
	}
	for v := range versions {
		for u := range urls {
			c := Capture{URL: fmt.Sprintf("http://h%d.example/p/%d", u%1000, u), Time: t0.Add(time.Duration(v) * day),
				Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: body(u, v)}
			if _, _, err := s.Put(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	}
	if st := s.Stats(); st.Versions != urls*versions {
		b.Fatalf("%d versions", st.Versions)
	}
	// Reopened, the index holds tables rather than its write-ahead log.
	dir := s.Dir()
	closing := time.Now()
	must(b, s.Close())
	s, err := Open(dir, Options{NoSync: true})
	b.ReportMetric(float64(time.Since(closing).Milliseconds()), "reopen-ms")
	must(b, err)
	defer s.Close()
	b.ReportMetric(float64(duBytes(b, filepath.Join(dir, "index")))/float64(urls*versions), "index-bytes/version")
	for range b.N {
		lat := make([]time.Duration, 20_000)
		for i := range lat {
			n := rng.IntN(urls)
			u := fmt.Sprintf("http://h%d.example/p/%d", n%1000, n)
			at := t0.Add(time.Duration(rng.IntN(versions*24)) * time.Hour)
			start := time.Now()
			if _, _, err := s.Get(ctx, u, at); err != nil {
				b.Fatal(err)
			}
			lat[i] = time.Since(start)
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
	}
}

// compressionPages returns the payloads the compression benchmarks use:
// the .html files of 2.5-100 KB under HEROD_HTML_CORPUS (the first 3,300),
// else 256 pages of BenchmarkPut (10-30 KB).
func compressionPages(tb testing.TB) [][]byte {
	tb.Helper()
	dir := os.Getenv("HEROD_HTML_CORPUS")
	if dir == "" {
		return benchPages(256)
	}
	var pages [][]byte
	for _, c := range corpusPages(tb, dir, 3300) {
		pages = append(pages, c.Body)
	}
	return pages
}

// BenchmarkGzipLevels measures what a record's compression costs, alone:
// the pages of BenchmarkPut (10-30 KB), or the .html files under
// HEROD_HTML_CORPUS, each gzipped as one member at levels 1, 6 (the
// default) and 9 — CPU per page (us/page) and compressed bytes per page
// byte (gzip/html).
func BenchmarkGzipLevels(b *testing.B) {
	pages := compressionPages(b)
	for _, level := range []int{1, 6, 9} {
		b.Run(fmt.Sprintf("gzip%d", level), func(b *testing.B) {
			var in, out int64
			var buf bytes.Buffer
			w, err := gzip.NewWriterLevel(&buf, level)
			must(b, err)
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := range b.N {
				p := pages[i%len(pages)]
				buf.Reset()
				w.Reset(&buf) // as the store's pool does
				_, err := w.Write(p)
				must(b, err)
				must(b, w.Close())
				in += int64(len(p))
				out += int64(buf.Len())
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "us/page")
			b.ReportMetric(float64(out)/float64(in), "gzip/html")
		})
	}
}

// BenchmarkZstdDict compares the record formats on real pages: the pages
// of BenchmarkGzipLevels (the first quarter, at most 300, train a
// dictionary as the store does, trainDict; the rest are measured), each
// compressed alone as a gzip member at levels 1 and 6, as a zstd frame
// without a dictionary at two levels (what records written before a
// store has its dictionary could be instead of gzip members) and as a
// zstd frame with the dictionary at three levels (the store uses the
// fastest) — CPU per page to compress (us/page) and to decompress
// (unpack-us/page), and compressed bytes per page byte (out/html).
func BenchmarkZstdDict(b *testing.B) {
	pages := compressionPages(b)
	train := min(300, len(pages)/4)
	zd, err := trainDict(pages[:train])
	must(b, err)
	raw, _, err := readDictFrame(bytes.NewReader(zd.frame()), int64(len(zd.frame())))
	must(b, err)
	rest := pages[train:]
	measure := func(b *testing.B, compress func(p []byte) []byte, unpack func(c []byte) []byte) {
		var in, out int64
		var packed [][]byte
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := range b.N {
			p := rest[i%len(rest)]
			c := compress(p)
			in += int64(len(p))
			out += int64(len(c))
			if len(packed) < len(rest) {
				packed = append(packed, c)
			}
		}
		cpu := cpuTime() - cpu0
		cpu0 = cpuTime()
		for i := range b.N {
			if p := unpack(packed[i%len(packed)]); len(p) != len(rest[i%len(rest)]) {
				b.Fatalf("page %d: %d bytes unpacked, want %d", i, len(p), len(rest[i%len(rest)]))
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "unpack-us/page")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "us/page")
		b.ReportMetric(float64(out)/float64(in), "out/html")
	}
	for _, level := range []int{1, 6} {
		b.Run(fmt.Sprintf("gzip%d", level), func(b *testing.B) {
			var buf bytes.Buffer
			w, err := gzip.NewWriterLevel(&buf, level)
			must(b, err)
			var zr gzip.Reader
			measure(b, func(p []byte) []byte {
				buf.Reset()
				w.Reset(&buf)
				_, err := w.Write(p)
				must(b, err)
				must(b, w.Close())
				return bytes.Clone(buf.Bytes())
			}, func(c []byte) []byte {
				must(b, zr.Reset(bytes.NewReader(c)))
				p, err := io.ReadAll(&zr)
				must(b, err)
				return p
			})
		})
	}
	// zstd frames without a dictionary (what a store could write before
	// it has one) and with the trained one, at the levels worth weighing.
	plainDec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	must(b, err)
	defer plainDec.Close()
	dictDec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(raw), zstd.WithDecoderConcurrency(1))
	must(b, err)
	defer dictDec.Close()
	for _, v := range []struct {
		name   string
		dict   bool
		levels []zstd.EncoderLevel
	}{
		{"zstd-nodict-", false, []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault}},
		{"zstd-dict-", true, []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression}},
	} {
		for _, level := range v.levels {
			b.Run(v.name+level.String(), func(b *testing.B) {
				opts := []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(level)}
				dec := plainDec
				if v.dict {
					opts, dec = append(opts, zstd.WithEncoderDict(raw)), dictDec
				}
				enc, err := zstd.NewWriter(nil, opts...)
				must(b, err)
				defer enc.Close()
				measure(b, func(p []byte) []byte {
					return enc.EncodeAll(p, nil)
				}, func(c []byte) []byte {
					p, err := dec.DecodeAll(c, nil)
					must(b, err)
					return p
				})
			})
		}
	}
}
