package search_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
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
// a ratio to the archive's, the CPU time a page and the encoded posting
// bytes a page (what a ring member sends to the term holders).
//
//	go test -run - -bench BenchmarkIndex -benchtime 1x ./search/
func BenchmarkIndex(b *testing.B) {
	ctx := context.Background()
	c := searchtest.New(1, 2000)
	for b.Loop() {
		dir := b.TempDir()
		arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Load(ctx, arc, 1, nil); err != nil {
			b.Fatal(err)
		}
		st, err := search.OpenStore(filepath.Join(dir, "search"))
		if err != nil {
			b.Fatal(err)
		}
		ix := &search.Indexer{Archive: arc, Sink: search.StoreSink{Store: st}, Docs: st}
		start, cpu0 := time.Now(), cpuTime()
		s, err := ix.Backfill(ctx, arc, nil)
		if err != nil {
			b.Fatal(err)
		}
		el, cpu := time.Since(start), cpuTime()-cpu0
		st.Close()
		arc.Close()
		pages := float64(s.Versions)
		idx, ar := dirBytes(b, filepath.Join(dir, "search")), dirBytes(b, filepath.Join(dir, "archive"))
		b.ReportMetric(float64(idx)/float64(ar), "index/archive-bytes")
		b.ReportMetric(float64(idx)/pages, "index-B/page")
		b.ReportMetric(float64(ar)/pages, "archive-B/page")
		b.ReportMetric(float64(el.Microseconds())/pages, "wall-µs/page")
		b.ReportMetric(float64(cpu.Microseconds())/pages, "cpu-µs/page")
		b.ReportMetric(float64(s.Bytes)/pages, "posting-B/page")
		b.ReportMetric(float64(s.Postings)/pages, "postings/page")
	}
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
		for _, q := range qs {
			n := len(strings.Fields(q))
			start := time.Now()
			if _, err := f.eng.Search(context.Background(), search.Request{Query: q, At: at}); err != nil {
				b.Fatal(err)
			}
			lat[n] = append(lat[n], time.Since(start))
		}
		for n := 1; n <= 3; n++ {
			ls := lat[n]
			slices.Sort(ls)
			b.ReportMetric(float64(ls[len(ls)/2].Microseconds())/1000, "p50-ms/"+string(rune('0'+n))+"term")
			b.ReportMetric(float64(ls[len(ls)*99/100].Microseconds())/1000, "p99-ms/"+string(rune('0'+n))+"term")
		}
	}
}
