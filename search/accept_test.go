package search_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// fixture is a store holding a corpus's four days, indexed at crawl time
// (IndexURL of each added version) into one posting store.
type fixture struct {
	c     *searchtest.Corpus
	arc   *archive.Store
	st    *search.Store
	eng   *search.Engine
	stats search.IndexStats
}

func newFixture(t testing.TB, pages int) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arc.Close() })
	st, err := search.OpenStore(filepath.Join(dir, "search"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{c: searchtest.New(1, pages), arc: arc, st: st}
	ix := &search.Indexer{Archive: arc, Sink: search.StoreSink{Store: st}, Docs: st}
	err = f.c.Load(ctx, arc, 4, func(_ int, added []archive.Version) error {
		for _, v := range added {
			s, err := ix.IndexURL(ctx, v.URL, false)
			if err != nil {
				return err
			}
			f.stats.Add(s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.eng = &search.Engine{Source: st, Stats: st, Texts: search.ArchiveTexts{Archive: arc}}
	return f
}

func (f *fixture) urls(t testing.TB, q string, at time.Time, k int) []string {
	t.Helper()
	r, err := f.eng.Search(context.Background(), search.Request{Query: q, At: at, Limit: k})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	var out []string
	for _, x := range r.Results {
		out = append(out, x.URL)
	}
	return out
}

func TestAcceptanceTargets(t *testing.T) {
	f := newFixture(t, 400)
	at := f.c.Day(2).Add(time.Hour)
	for _, q := range f.c.TargetQueries(7, 30) {
		if got := f.urls(t, q.Q, at, 10); !slices.Contains(got, q.Target) {
			t.Errorf("query %q: %s not in top 10 %v", q.Q, q.Target, got)
		}
	}
}

func TestAcceptanceAsOf(t *testing.T) {
	f := newFixture(t, 60)
	for _, tc := range []struct {
		q    string
		day  int
		want string
	}{
		{f.c.AddedWord, 1, ""},
		{f.c.AddedWord, 2, f.c.Changed},
		{f.c.AddedWord, 4, f.c.Changed},
	} {
		got := f.urls(t, tc.q, f.c.Day(tc.day).Add(time.Hour), 10)
		if want := []string{tc.want}; tc.want == "" && len(got) != 0 || tc.want != "" && !slices.Equal(got, want) {
			t.Errorf("%q as of day %d: got %v, want %q", tc.q, tc.day, got, tc.want)
		}
	}
	// The page that turns 404 on day 3: its own rarest words find it on
	// day 2 and not on day 4.
	gone := slices.IndexFunc(f.c.Pages, func(p searchtest.Page) bool { return p.URL == f.c.Gone })
	q := f.c.Pages[gone].Title
	if got := f.urls(t, q, f.c.Day(2).Add(time.Hour), 10); !slices.Contains(got, f.c.Gone) {
		t.Errorf("%q as of day 2: %v lacks %s", q, got, f.c.Gone)
	}
	if got := f.urls(t, q, f.c.Day(4).Add(time.Hour), 10); slices.Contains(got, f.c.Gone) {
		t.Errorf("%q as of day 4: %v holds %s, 404 since day 3", q, got, f.c.Gone)
	}
}

// TestAcceptanceReference compares herod's ranking, as shipped, with a
// bleve index of the same pages (BM25) over 50 queries: at least 90% of
// the reference's top 10 must be in herod's. The reference is given the
// mean field length as BM25's average length, the definition herod,
// Lucene and SQLite FTS5 use (docs/search.md, "Ranking"); the recall
// against bleve's own average (its vocabulary over its documents) is
// logged beside it.
func TestAcceptanceReference(t *testing.T) {
	f := newFixture(t, 400)
	ref, err := searchtest.NewReference(filepath.Join(t.TempDir(), "bleve"), f.c, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	at := f.c.Day(2).Add(time.Hour)
	recall := func() float64 {
		held, total := 0, 0
		for _, q := range f.c.MixedQueries(3, 50) {
			want, err := ref.Top(q, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := f.urls(t, q, at, 10)
			for _, u := range want {
				total++
				if slices.Contains(got, u) {
					held++
				}
			}
		}
		return float64(held) / float64(total)
	}
	own := recall()
	ref.MeanLength = true
	mean := recall()
	d, err := f.st.DocStats(context.Background(), search.Millis(at))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("average length: herod's mean %.1f tokens, bleve's vocabulary over documents %.1f (%d terms, %d documents)",
		d.AvgLen(), float64(f.st.Counts().Terms)/float64(d.N), f.st.Counts().Terms, d.N)
	t.Logf("recall of the reference's top 10 over 50 queries: %.3f with the mean length (asserted), %.3f with bleve's vocabulary over documents", mean, own)
	if mean < 0.9 {
		t.Errorf("recall %.3f < 0.9", mean)
	}
}
