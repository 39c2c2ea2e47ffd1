package search_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/search"
)

// BenchmarkQueryScale measures what a query costs the store as it
// grows: a store pre-filled with N versions (BenchmarkStoreScale's
// synthetic web, with their document rows), a tenth of whose URLs then
// changed (a new version, the old one ended), answers the posting
// queries of a common term (in nearly every version), a mid term (a
// fifth), a rare term (about one in 180) and an AND of the rare and the
// common one (the rare term's postings, then the common term's for its
// candidates, as Engine does: what a phrase asks the store too), as of
// after the change, and the collection statistics just after a write
// (what a query on a crawling node reads). It reports each one's
// median latency and the blocks it read, so that 5 K and 50 K compare
// in one run.
//
//	go test -run - -bench BenchmarkQueryScale -benchtime 1x -timeout 30m ./search/
func BenchmarkQueryScale(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("prefill=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchQueryScale(b, n)
			}
		})
	}
}

func benchQueryScale(b *testing.B, n int) {
	const termsPer, reps = 200, 41
	ctx := context.Background()
	st, err := search.OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w := newScaleWeb(1, termsPer)
	w.prefill(b, st, n, true)
	day := int64(24 * time.Hour / time.Millisecond)
	from := w.t + day
	var ps []search.Posting
	var rows []search.DocRow
	for u := 0; u < n; u += 10 {
		old := w.version(u, u, w.t, from)
		nw := w.version(u, n+u, from, search.Open)
		ps = append(append(ps, old...), nw...)
		for _, p := range []search.Posting{old[0], nw[0]} {
			rows = append(rows, search.DocRow{Key: p.Key, URL: p.URL, From: p.From, To: p.To, DocLen: p.DocLen})
		}
		if len(ps) >= 100_000 || u+10 >= n {
			if err := st.Put(ctx, ps); err != nil {
				b.Fatal(err)
			}
			if err := st.PutDocs(ctx, rows); err != nil {
				b.Fatal(err)
			}
			ps, rows = ps[:0], rows[:0]
		}
	}
	at := from + 1
	docWrites := 0
	common, mid, rare := w.vocab[0], w.vocab[100], w.vocab[3000]
	queries := []struct {
		name string
		run  func() (int, error)
	}{
		{"common", func() (int, error) { return postings(ctx, st, common, at, nil) }},
		{"mid", func() (int, error) { return postings(ctx, st, mid, at, nil) }},
		{"rare", func() (int, error) { return postings(ctx, st, rare, at, nil) }},
		{"and", func() (int, error) {
			l, err := st.Postings(ctx, search.PostingQuery{Term: rare, At: at})
			if err != nil {
				return 0, err
			}
			keys := make([]id.ID, 0, len(l.Postings))
			for _, p := range l.Postings {
				keys = append(keys, p.Key)
			}
			return postings(ctx, st, common, at, keys)
		}},
		{"docstats", func() (int, error) {
			// A write of the document table, as a crawl's batch makes,
			// then the statistics a query asks for.
			docWrites++
			u := fmt.Sprintf("http://x.example/%d", docWrites)
			r := []search.DocRow{{Key: id.OfString(u), URL: u, From: at, To: search.Open, DocLen: 10}}
			if err := st.PutDocs(ctx, r); err != nil {
				return 0, err
			}
			t0 := time.Now()
			s, err := st.DocStats(ctx, at)
			queryWall += time.Since(t0)
			return int(s.N), err
		}},
	}
	for _, q := range queries {
		var lat []time.Duration
		blocks0 := search.BlocksRead(st)
		hits := 0
		for range reps {
			queryWall = 0
			t0 := time.Now()
			h, err := q.run()
			if err != nil {
				b.Fatal(err)
			}
			hits = h
			d := time.Since(t0)
			if queryWall > 0 {
				d = queryWall // docstats: the read alone, not the write
			}
			lat = append(lat, d)
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), q.name+"-µs")
		if q.name != "docstats" {
			b.ReportMetric(float64(search.BlocksRead(st)-blocks0)/reps, q.name+"-blocks")
		}
		b.Logf("%s: %d live, median %v", q.name, hits, lat[len(lat)/2])
	}
}

// queryWall is the part of a query benchmark's step to time, when not
// all of it (set by the step).
var queryWall time.Duration

// postings returns the DF of term at at, or with keys how many of them
// hold it.
func postings(ctx context.Context, st *search.Store, term string, at int64, keys []id.ID) (int, error) {
	q := search.PostingQuery{Term: term, At: at, Keys: keys}
	if len(keys) > 0 {
		q.Limit = len(keys)
	}
	l, err := st.Postings(ctx, q)
	if len(keys) > 0 {
		return len(l.Postings), err
	}
	return int(l.DF), err
}
