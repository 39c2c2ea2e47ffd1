package search_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// countingArchive counts the captures the indexer reads.
type countingArchive struct {
	arc   search.Versions
	reads atomic.Int64
}

func (a *countingArchive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	return a.arc.Versions(ctx, url)
}

func (a *countingArchive) Read(ctx context.Context, v archive.Version) (*archive.Capture, error) {
	a.reads.Add(1)
	return a.arc.Read(ctx, v)
}

// addOnly is a Sink that is not an Ender: every version is sent as
// postings.
type addOnly struct{ s *search.Store }

func (a addOnly) Add(ctx context.Context, ps []search.Posting) error { return a.s.Put(ctx, ps) }

// storeState is everything a store answers: its counts, every posting
// (Range, with its live range) and the collection statistics as of
// each day.
type storeState struct {
	counts search.Counts
	ps     []search.Posting
	stats  []search.DocStats
}

func stateOf(t *testing.T, s *search.Store, w churnWeb, days int) storeState {
	t.Helper()
	ctx := context.Background()
	st := storeState{counts: s.Counts()}
	must(t, s.Range(ctx, id.ID{}, id.ID{}, func(p search.Posting) error { st.ps = append(st.ps, p); return nil }))
	slices.SortFunc(st.ps, func(a, b search.Posting) int {
		return cmp.Or(strings.Compare(a.Term, b.Term), strings.Compare(a.URL, b.URL), cmp.Compare(a.From, b.From))
	})
	for d := 1; d <= days+1; d++ {
		ds, err := s.DocStats(ctx, search.Millis(w.day(d).Add(2*time.Hour)))
		must(t, err)
		st.stats = append(st.stats, ds)
	}
	return st
}

// churnWeb is a small web that changes a lot: each day a third of its
// pages change their words, one in twelve answers 404 (and comes back
// the day after).
type churnWeb struct {
	start time.Time
	pages int
}

func (w churnWeb) day(d int) time.Time { return w.start.Add(time.Duration(d-1) * 24 * time.Hour) }

// load stores day d's captures and returns those stored.
func (w churnWeb) load(t *testing.T, arc *archive.Store, d int) []archive.Version {
	t.Helper()
	words := strings.Fields("war peace ship sea harbor sail wind storm island king army river bridge city wall gate road horse")
	var out []archive.Version
	for i := range w.pages {
		gen := 0 // the page's words change on days its draw says
		for dd := 2; dd <= d; dd++ {
			if rand.New(rand.NewPCG(uint64(i), uint64(dd))).IntN(3) == 0 {
				gen = dd
			}
		}
		rng := rand.New(rand.NewPCG(uint64(i), uint64(100+gen)))
		var body []string
		for range 10 + rng.IntN(30) {
			body = append(body, words[rng.IntN(len(words))])
		}
		h := http.Header{"Content-Type": {"text/html"}}
		c := archive.Capture{URL: fmt.Sprintf("http://h%d.example/%d", i%5, i), Time: w.day(d), Status: 200, Header: h,
			Body: searchtest.HTML(fmt.Sprintf("page %d", i), strings.Join(body, " "))}
		if (i+d)%12 == 0 {
			c.Status, c.Body = 404, []byte("gone")
		}
		v, ok, err := arc.Put(context.Background(), c)
		must(t, err)
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// TestIndexEndsByIdentity: indexing a crawl as it happens (IndexAdded
// each day) through a Sink that ends a changed page's previous version
// by identity (a StoreSink) stores exactly what sending its postings
// again does (the previous version read and analyzed again), while
// reading only the versions added; a version the store does not hold
// (indexing began later) is read and sent whole.
func TestIndexEndsByIdentity(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := churnWeb{start: time.Date(2024, 3, 1, 6, 0, 0, 0, time.UTC), pages: 120}
	arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	must(t, err)
	defer arc.Close()
	open := func(name string) *search.Store {
		s, err := search.OpenStore(filepath.Join(dir, name))
		must(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	full, ended, late, lateFull := open("full"), open("ended"), open("late"), open("late-full")
	fullArc, endArc := &countingArchive{arc: arc}, &countingArchive{arc: arc}
	ixFull := &search.Indexer{Archive: fullArc, Sink: addOnly{full}, Docs: full}
	ixEnd := &search.Indexer{Archive: endArc, Sink: search.StoreSink{Store: ended}, Docs: ended}
	// late and lateFull index only from day 4: the versions the crawl
	// ends then were never indexed there.
	ixLate := &search.Indexer{Archive: arc, Sink: search.StoreSink{Store: late}, Docs: late}
	ixLateFull := &search.Indexer{Archive: arc, Sink: addOnly{lateFull}, Docs: lateFull}
	const days = 6
	var added, endedN, indexable int
	for d := 1; d <= days; d++ {
		vs := w.load(t, arc, d)
		as := make([]search.Added, len(vs))
		for i, v := range vs {
			as[i] = search.Added{URL: v.URL, Time: v.Time}
			if search.Indexable(v.Status, v.ContentType) {
				indexable++
			}
		}
		added += len(vs)
		_, err := ixFull.IndexAdded(ctx, as)
		must(t, err)
		st, err := ixEnd.IndexAdded(ctx, as)
		must(t, err)
		endedN += st.Ended
		if d >= 4 {
			_, err := ixLate.IndexAdded(ctx, as)
			must(t, err)
			_, err = ixLateFull.IndexAdded(ctx, as)
			must(t, err)
		}
	}
	if endedN < 50 {
		t.Fatalf("%d versions ended by identity, want many", endedN)
	}
	want := stateOf(t, full, w, days)
	if got := stateOf(t, ended, w, days); !statesEqual(got, want) {
		t.Fatalf("ended by identity: %d postings %+v %v, sent again: %d postings %+v %v",
			len(got.ps), got.counts, got.stats, len(want.ps), want.counts, want.stats)
	}
	if n := endArc.reads.Load(); n != int64(indexable) {
		t.Errorf("ended by identity: read %d captures, want the %d indexable ones added", n, indexable)
	}
	if n := fullArc.reads.Load(); n != int64(indexable+endedN) {
		t.Errorf("sent again: read %d captures, want %d (added) + %d (ended)", n, indexable, endedN)
	}
	if got, want := stateOf(t, late, w, days), stateOf(t, lateFull, w, days); !statesEqual(got, want) {
		t.Fatalf("indexed from day 4: ended by identity %+v, sent again %+v", got.counts, want.counts)
	}
	t.Logf("%d versions added, %d indexable, %d ended by identity", added, indexable, endedN)
}

func statesEqual(a, b storeState) bool {
	return a.counts == b.counts && slices.Equal(a.ps, b.ps) && slices.Equal(a.stats, b.stats)
}
