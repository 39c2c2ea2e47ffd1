package search_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// TestIndexAddedOlder: a version added older than the ones held (an
// imported capture of an earlier day) is indexed when it is added, and
// the version before it ends at it, though neither is among the URL's
// newest two.
func TestIndexAddedOlder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	must(t, err)
	t.Cleanup(func() { arc.Close() })
	st, err := search.OpenStore(filepath.Join(dir, "search"))
	must(t, err)
	t.Cleanup(func() { st.Close() })
	ix := &search.Indexer{Archive: arc, Sink: search.StoreSink{Store: st}, Docs: st}
	eng := &search.Engine{Source: st, Stats: st, Texts: search.ArchiveTexts{Archive: arc}}
	const u = "http://old.example/page"
	day := func(d int) time.Time { return time.Date(2020, 1, d, 12, 0, 0, 0, time.UTC) }
	put := func(d int, words string) archive.Version {
		t.Helper()
		v, ok, err := arc.Put(ctx, archive.Capture{URL: u, Time: day(d), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: searchtest.HTML("day", fmt.Sprintf("%s day%d", words, d))})
		must(t, err)
		if !ok {
			t.Fatalf("day %d: not stored", d)
		}
		return v
	}
	// Crawled on days 1, 10, 20 and 30, indexed as a crawl indexes.
	for _, d := range []int{1, 10, 20, 30} {
		v := put(d, "common words everywhere")
		if d == 1 {
			v = put(2, "common words everywhere beforehand")
		}
		if _, err := ix.IndexAdded(ctx, []search.Added{{URL: v.URL, Time: v.Time}}); err != nil {
			t.Fatal(err)
		}
	}
	found := func(q string, d int) bool {
		t.Helper()
		r, err := eng.Search(ctx, search.Request{Query: q, At: day(d).Add(time.Hour), Limit: 10})
		must(t, err)
		return slices.ContainsFunc(r.Results, func(x search.Result) bool { return x.URL == u })
	}
	if !found("beforehand", 5) || found("beforehand", 12) {
		t.Fatal("the crawled versions are not indexed as expected")
	}
	// An import adds day 5, between days 2 and 10: the version of day 2
	// must end at it, and its own words be found from day 5 to day 10.
	v := put(5, "common words everywhere imported")
	if _, err := ix.IndexAdded(ctx, []search.Added{{URL: v.URL, Time: v.Time}}); err != nil {
		t.Fatal(err)
	}
	if !found("imported", 6) || found("imported", 4) || found("imported", 11) {
		t.Errorf("imported word as of days 4/6/11: %v %v %v, want false true false",
			found("imported", 4), found("imported", 6), found("imported", 11))
	}
	if !found("beforehand", 3) || found("beforehand", 6) {
		t.Errorf("day 2's word as of days 3/6: %v %v, want true false", found("beforehand", 3), found("beforehand", 6))
	}
}
