package search_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/realweb"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// BenchmarkIndex indexes a 2,000-page corpus's first day, stored in an
// archive, by a backfill, and reports the index's bytes on disk a page as
// a ratio to the archive's, the CPU time a page and the posting bytes a
// page a ring member sends to the term holders (one copy).
//
//	go test -run - -bench BenchmarkIndex -benchtime 1x ./search/
func BenchmarkIndex(b *testing.B) {
	c := searchtest.New(1, 2000)
	for b.Loop() {
		benchIndex(b, func(ctx context.Context, arc *archive.Store) error { return c.Load(ctx, arc, 1, nil) }, backfill)
	}
}

// BenchmarkIndexCrawl is BenchmarkIndex indexing as a crawl does: the
// URLs in batches of 256 (IndexURLs), each its own write, over 2 days
// (the second day's changed pages end their first version).
//
//	go test -run - -bench BenchmarkIndexCrawl -benchtime 1x ./search/
func BenchmarkIndexCrawl(b *testing.B) {
	c := searchtest.New(1, 2000)
	for b.Loop() {
		var days [][]string
		load := func(ctx context.Context, arc *archive.Store) error {
			return c.Load(ctx, arc, 2, func(_ int, added []archive.Version) error {
				var urls []string
				for _, v := range added {
					urls = append(urls, v.URL)
				}
				days = append(days, urls)
				return nil
			})
		}
		benchIndex(b, load, func(ctx context.Context, ix *search.Indexer, _ *archive.Store) (search.IndexStats, error) {
			var total search.IndexStats
			for _, urls := range days {
				for len(urls) > 0 {
					n := min(len(urls), 256)
					st, err := ix.IndexURLs(ctx, urls[:n])
					if err != nil {
						return total, err
					}
					total.Add(st)
					urls = urls[n:]
				}
			}
			return total, nil
		})
	}
}

// backfill indexes the archive by a backfill.
func backfill(ctx context.Context, ix *search.Indexer, arc *archive.Store) (search.IndexStats, error) {
	return ix.Backfill(ctx, arc, nil)
}

// BenchmarkIndexRealweb is BenchmarkIndex on the pages of internal/realweb
// (the realistic site of the crawl and ring benchmarks: 6-20 KB of HTML
// a page), fetched from it over loopback and stored in an archive.
//
//	go test -run - -bench BenchmarkIndexRealweb -benchtime 1x ./search/
func BenchmarkIndexRealweb(b *testing.B) {
	ctx := context.Background()
	w, err := realweb.Start(ctx, realweb.Config{Hosts: 20, Pages: 50, NoDelay: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var caps []archive.Capture
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, seed := range w.Seeds() {
		for n := range 50 {
			u := seed + "p/" + strconv.Itoa(n) + ".html"
			resp, err := http.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("%s: %d %v", u, resp.StatusCode, err)
			}
			caps = append(caps, archive.Capture{URL: u, Time: t0, Status: 200, Header: resp.Header, Body: body})
		}
	}
	for b.Loop() {
		benchIndex(b, func(ctx context.Context, arc *archive.Store) error {
			for _, c := range caps {
				if _, _, err := arc.Put(ctx, c); err != nil {
					return err
				}
			}
			return nil
		}, backfill)
	}
}

// benchIndex stores captures in an archive with load, indexes them with
// index into one Store and reports the figures of BenchmarkIndex: the
// index's bytes at rest (closed, opened again so that goleveldb's journal
// is in its tables), as written and compacted (goleveldb's compaction
// drops the blocks a later write replaced), and the postings' bytes as posting
// sets (the wire form, before and after zstd) and as single postings
// (the former wire form), each a page.
func benchIndex(b *testing.B, load func(context.Context, *archive.Store) error,
	index func(context.Context, *search.Indexer, *archive.Store) (search.IndexStats, error)) {
	ctx := context.Background()
	dir := b.TempDir()
	arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer arc.Close()
	if err := load(ctx, arc); err != nil {
		b.Fatal(err)
	}
	st, err := search.OpenStore(filepath.Join(dir, "search"))
	if err != nil {
		b.Fatal(err)
	}
	sink := &recordSink{Sink: search.StoreSink{Store: st}}
	ix := &search.Indexer{Archive: arc, Sink: sink, Docs: st}
	start, cpu0 := time.Now(), cpuTime()
	s, err := index(ctx, ix, arc)
	if err != nil {
		b.Fatal(err)
	}
	el, cpu := time.Since(start), cpuTime()-cpu0
	pages := float64(st.Counts().Docs) // versions indexed, each once
	st.Close()
	written := dirBytes(b, filepath.Join(dir, "search"))
	if st, err = search.OpenStore(filepath.Join(dir, "search")); err != nil {
		b.Fatal(err)
	}
	st.Close()
	idx, ar := dirBytes(b, filepath.Join(dir, "search")), dirBytes(b, filepath.Join(dir, "archive"))
	db, err := leveldb.OpenFile(filepath.Join(dir, "search"), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := db.CompactRange(util.Range{}); err != nil {
		b.Fatal(err)
	}
	db.Close()
	b.ReportMetric(float64(dirBytes(b, filepath.Join(dir, "search")))/pages, "compacted-B/page")
	b.ReportMetric(float64(idx)/float64(ar), "index/archive-bytes")
	b.ReportMetric(float64(idx)/pages, "index-B/page")
	b.ReportMetric(float64(written)/pages, "written-B/page")
	b.ReportMetric(float64(ar)/pages, "archive-B/page")
	b.ReportMetric(float64(el.Microseconds())/pages, "wall-µs/page")
	b.ReportMetric(float64(cpu.Microseconds())/pages, "cpu-µs/page")
	b.ReportMetric(float64(s.Postings)/pages, "postings/page")
	set, setZ, single, singleZ := sink.sizes()
	b.ReportMetric(float64(set)/pages, "set-B/page")
	b.ReportMetric(float64(setZ)/pages, "set-zstd-B/page")
	b.ReportMetric(float64(single)/pages, "single-B/page")
	b.ReportMetric(float64(singleZ)/pages, "single-zstd-B/page")
}

// recordSink keeps the batches it passes on, to size them afterwards.
type recordSink struct {
	search.Sink
	batches [][]search.Posting
}

func (r *recordSink) Add(ctx context.Context, ps []search.Posting) error {
	r.batches = append(r.batches, slices.Clone(ps))
	return r.Sink.Add(ctx, ps)
}

// sizes returns the batches' bytes as posting sets and as single
// postings sorted by URL key (the former wire form), each before and
// after zstd.
func (r *recordSink) sizes() (set, setZ, single, singleZ int) {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	defer enc.Close()
	for _, ps := range r.batches {
		sb := search.AppendPostingSet(nil, ps)
		set += len(sb)
		setZ += len(enc.EncodeAll(sb, nil))
		ps = slices.Clone(ps)
		slices.SortFunc(ps, func(a, b search.Posting) int { return a.Key.Cmp(b.Key) })
		var ob []byte
		for _, p := range ps {
			ob = p.AppendBinary(ob)
		}
		single += len(ob)
		singleZ += len(enc.EncodeAll(ob, nil))
	}
	return set, setZ, single, singleZ
}

// BenchmarkQuery reports the latency of 1-, 2- and 3-term queries on one
// node's index of the 400-page corpus (postings and verification from
// the local archive).
//
//	go test -run - -bench BenchmarkQuery -benchtime 1x ./search/
func BenchmarkQuery(b *testing.B) {
	f := newFixture(b, 400)
	at := f.c.Day(2).Add(time.Hour)
	qs := f.c.MixedQueries(11, 300)
	for b.Loop() {
		lat := map[int][]time.Duration{}
		cpu0 := cpuTime()
		for _, q := range qs {
			n := len(strings.Fields(q))
			start := time.Now()
			if _, err := f.eng.Search(context.Background(), search.Request{Query: q, At: at}); err != nil {
				b.Fatal(err)
			}
			lat[n] = append(lat[n], time.Since(start))
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(qs)), "cpu-ms/query")
		for n := 1; n <= 3; n++ {
			ls := lat[n]
			slices.Sort(ls)
			b.ReportMetric(float64(ls[len(ls)/2].Microseconds())/1000, "p50-ms/"+string(rune('0'+n))+"term")
			b.ReportMetric(float64(ls[len(ls)*99/100].Microseconds())/1000, "p99-ms/"+string(rune('0'+n))+"term")
		}
	}
}
