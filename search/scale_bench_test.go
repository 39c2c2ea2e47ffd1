package search_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/search"
)

// scaleWeb is a synthetic stream of versions for the store's scale
// benchmark: each version holds termsPer distinct terms drawn from a
// Zipf vocabulary (a prose page's distinct stems), like the scale web's
// pages.
type scaleWeb struct {
	termsPer int
	vocab    []string
	seed     uint64
	t        int64
}

func newScaleWeb(seed uint64, termsPer int) *scaleWeb {
	w := &scaleWeb{seed: seed, termsPer: termsPer, t: 1_700_000_000_000}
	for i := range 200_000 {
		w.vocab = append(w.vocab, "w"+strconv.FormatInt(int64(i), 36))
	}
	return w
}

// version returns the postings of version number v (its terms a
// function of v) of URL number u captured at from and live until to.
func (w *scaleWeb) version(u, v int, from, to int64) []search.Posting {
	rng := rand.New(rand.NewPCG(w.seed, uint64(v)))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(w.vocab)-1))
	url := fmt.Sprintf("http://h%d.example/p/%d", u%400, u)
	key := id.OfString(url)
	seen := map[uint64]bool{}
	ps := make([]search.Posting, 0, w.termsPer)
	for len(ps) < w.termsPer {
		t := zipf.Uint64()
		if seen[t] {
			continue
		}
		seen[t] = true
		ps = append(ps, search.Posting{Term: w.vocab[t], Key: key, URL: url, From: from, To: to, TF: 1 + uint32(rng.IntN(4)), DocLen: 2000})
	}
	return ps
}

// procWritten returns the bytes this process has written through system
// calls (/proc/self/io wchar): the journal, tables and compactions.
func procWritten() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("wchar: ")); ok {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkStoreScale measures what a later crawl day costs the store
// as it grows: a store pre-filled with N versions (200 terms each, Zipf
// vocabulary) then takes 40 batches of 128 changed URLs, each a new
// version and its previous version's postings sent again with their
// end (as Indexer.IndexAdded sends them), through one Store. It reports
// CPU and bytes written (journal, tables, compaction) per new version,
// so that 5 K and 50 K pre-filled stores compare in one run (the store
// closed and opened again after the prefill, so that the window does
// not pay for the prefill's compactions). The store
// folds its pending ends once they reach a sixteenth of its versions
// (at least one fold in the window at 50 K, about ten at 5 K; folds
// counts them), so that the figures include the folds' cost.
//
//	go test -run - -bench BenchmarkStoreScale -benchtime 1x -timeout 30m ./search/
func BenchmarkStoreScale(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("prefill=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchStoreScale(b, n)
			}
		})
	}
}

func benchStoreScale(b *testing.B, n int) {
	const termsPer, batches, perBatch = 200, 40, 128
	ctx := context.Background()
	dir := b.TempDir()
	st, err := search.OpenStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	w := newScaleWeb(1, termsPer)
	day := int64(24 * time.Hour / time.Millisecond)
	w.prefill(b, st, n, false)
	// Closed and opened again, so that the window does not pay for the
	// prefill's compactions.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if st, err = search.OpenStore(dir); err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	search.SetFoldBound(st, 0, 16)
	var ps []search.Posting
	b.Logf("goleveldb before the batches:\n%s", search.StoreStats(st))
	// The changed URLs: each its day-0 version ended and a new one.
	cpu0, w0, t0 := cpuTime(), procWritten(), time.Now()
	for i := range batches {
		ps = ps[:0]
		for j := range perBatch {
			u := (i*perBatch + j) * 7919 % n
			from := w.t + day
			ps = append(ps, w.version(u, u, w.t, from)...)
			ps = append(ps, w.version(u, n+u, from, search.Open)...)
		}
		if err := st.Put(ctx, ps); err != nil {
			b.Fatal(err)
		}
	}
	nv := float64(batches * perBatch)
	b.Logf("goleveldb after the batches:\n%s", search.StoreStats(st))
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/nv, "cpu-µs/version")
	b.ReportMetric(float64(procWritten()-w0)/nv, "written-B/version")
	b.ReportMetric(float64(time.Since(t0).Microseconds())/nv, "wall-µs/version")
	b.ReportMetric(float64(search.Folds(st)), "folds")
}

// prefill stores the first versions of URLs 0..n-1 (and their document
// rows if docs), in synced batches of about 200,000 postings.
func (w *scaleWeb) prefill(b *testing.B, st *search.Store, n int, docs bool) {
	ctx := context.Background()
	var ps []search.Posting
	var rows []search.DocRow
	start := time.Now()
	for u := range n {
		vp := w.version(u, u, w.t, search.Open)
		ps = append(ps, vp...)
		rows = append(rows, search.DocRow{Key: vp[0].Key, URL: vp[0].URL, From: vp[0].From, To: vp[0].To, DocLen: vp[0].DocLen})
		if len(ps) >= 200_000 || u == n-1 {
			if err := st.Put(ctx, ps); err != nil {
				b.Fatal(err)
			}
			if docs {
				if err := st.PutDocs(ctx, rows); err != nil {
					b.Fatal(err)
				}
			}
			ps, rows = ps[:0], rows[:0]
		}
	}
	b.Logf("prefill %d versions (%d postings): %v", n, st.Counts().Postings, time.Since(start).Round(time.Millisecond))
}
