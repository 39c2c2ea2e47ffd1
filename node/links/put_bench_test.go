package links

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// BenchmarkIndexPut measures what the target side of a link sweep costs
// as the index grows: a crawl day 0 of N sources with 10 links each (one
// to the host's home page, one to one of 100 ring-wide popular pages, far
// over the cap, eight to pages of the same or another host), delivered
// as the Router delivers them (20,000 records of many sources a sweep
// batch, sorted by target key, 5,000 a Put), then a revisit day on which
// 8% of the sources changed (two of their links closed, two new ones
// opened). Metrics: CPU and wall microseconds a record and bytes written
// (the process's wchar: log, tables and compactions) a record, of each
// day, and the CPU and wall milliseconds of opening the index after
// them (Open's count of the records held per target). The 20 K ÷ 200 K
// ratios of a run show how flat the cost is; 1 M sources (10 M records,
// 8-10 minutes) shows the write buffer's effect on compaction
// (node/links/ldbopts.go).
//
//	go test ./node/links -run '^$' -bench 'BenchmarkIndexPut/sources=(20000|200000)$' -benchtime 1x
//	go test ./node/links -run '^$' -bench 'BenchmarkIndexPut/sources=1000000' -benchtime 1x
func BenchmarkIndexPut(b *testing.B) {
	for _, n := range []int{20_000, 200_000, 1_000_000} {
		b.Run(fmt.Sprintf("sources=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchIndexPut(b, n)
			}
		})
	}
}

// benchWeb is the link structure of BenchmarkIndexPut: 1,000 hosts.
// Page i < 1000 is host i's home page.
type benchWeb struct{ n int }

func (w benchWeb) page(i int) string {
	if i < 1000 {
		return fmt.Sprintf("http://h%d.test/", i)
	}
	return fmt.Sprintf("http://h%d.test/p%d", i%1000, i)
}

// targets are the 10 pages source i links to on day d (0 or 1).
func (w benchWeb) targets(i, d int) []int {
	ts := []int{i % 1000, 1000 + i%100}
	for j := range 8 {
		k := j
		if d == 1 && j < 2 && i%12 == 0 {
			k += 8 // two links replaced on a changed page
		}
		ts = append(ts, (i*7919+k*104729)%w.n)
	}
	return ts
}

func benchIndexPut(b *testing.B, n int) {
	ctx := context.Background()
	t0 := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
	t1 := t0.Add(24 * time.Hour)
	dir := b.TempDir()
	x, err := Open(dir, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { x.Close() }()
	w := benchWeb{n}
	deliver := func(recs []Record) {
		ks := make([]keyed, len(recs))
		for i, r := range recs {
			ks[i] = keyed{id.OfString(r.Target), r}
		}
		slices.SortFunc(ks, func(a, b keyed) int { return a.key.Cmp(b.key) })
		for len(ks) > 0 {
			m := min(len(ks), MaxBatch)
			batch := make([]Record, m)
			for i := range m {
				batch[i] = ks[i].r
			}
			if _, err := x.Put(ctx, batch); err != nil {
				b.Fatal(err)
			}
			ks = ks[m:]
		}
	}
	day := func(sources func(yield func(i int)), recsOf func(i int) []Record) (cpu, wall time.Duration, written int64, recs int) {
		c0, w0, s0 := benchCPU(), benchWritten(), time.Now()
		var batch []Record
		sources(func(i int) {
			batch = append(batch, recsOf(i)...)
			if len(batch) >= syncBatch {
				recs += len(batch)
				deliver(batch)
				batch = batch[:0]
			}
		})
		recs += len(batch)
		deliver(batch)
		return benchCPU() - c0, time.Since(s0), benchWritten() - w0, recs
	}
	all := func(yield func(int)) {
		for i := range n {
			yield(i)
		}
	}
	changed := func(yield func(int)) {
		for i := 0; i < n; i += 12 {
			yield(i)
		}
	}
	rec := func(i, t int, from, until, seen time.Time) Record {
		return Record{Target: w.page(t), Source: w.page(i), Anchor: "link " + strconv.Itoa(t%50), From: from, Until: until, Seen: seen}
	}
	cpu0, wall0, wr0, n0 := day(all, func(i int) []Record {
		var rs []Record
		for _, t := range w.targets(i, 0) {
			rs = append(rs, rec(i, t, t0, time.Time{}, t0))
		}
		return rs
	})
	cpu1, wall1, wr1, n1 := day(changed, func(i int) []Record {
		old, cur := w.targets(i, 0), w.targets(i, 1)
		var rs []Record
		for j := range old {
			if old[j] != cur[j] {
				rs = append(rs, rec(i, old[j], t0, t1, t1), rec(i, cur[j], t1, time.Time{}, t1))
			}
		}
		return rs
	})
	b.ReportMetric(float64(cpu0.Microseconds())/float64(n0), "day0-cpu-µs/rec")
	b.ReportMetric(float64(wall0.Microseconds())/float64(n0), "day0-wall-µs/rec")
	b.ReportMetric(float64(wr0)/float64(n0), "day0-written-B/rec")
	b.ReportMetric(float64(cpu1.Microseconds())/float64(n1), "day1-cpu-µs/rec")
	b.ReportMetric(float64(wall1.Microseconds())/float64(n1), "day1-wall-µs/rec")
	b.ReportMetric(float64(wr1)/float64(n1), "day1-written-B/rec")
	if v, err := x.db.GetProperty("leveldb.stats"); err == nil {
		b.Logf("%d sources, %d + %d records; goleveldb:\n%s", n, n0, n1, v)
	}
	// What a start costs: Open's count of the records held per target.
	x.Close()
	c0, s0 := benchCPU(), time.Now()
	if x, err = Open(dir, Config{}); err != nil {
		b.Fatal(err)
	}
	<-x.counted
	if x.held == nil {
		b.Fatal("no bound of held records after the count")
	}
	b.ReportMetric(float64((benchCPU() - c0).Milliseconds()), "open-count-cpu-ms")
	b.ReportMetric(float64(time.Since(s0).Milliseconds()), "open-count-wall-ms")
}

func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWritten is the bytes the process wrote (/proc/self/io wchar).
func benchWritten() int64 {
	v, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(v, []byte("\n")) {
		if s, ok := bytes.CutPrefix(l, []byte("wchar: ")); ok {
			n, _ := strconv.ParseInt(string(s), 10, 64)
			return n
		}
	}
	return 0
}
