package search_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// sinkLog keeps every batch a Sink is given, in order.
type sinkLog struct{ batches [][]search.Posting }

func (s *sinkLog) Add(_ context.Context, ps []search.Posting) error {
	s.batches = append(s.batches, slices.Clone(ps))
	return nil
}

// TestIndexWorkers: reading and analyzing URLs on several workers sends
// the same postings in the same batches and order as one worker, as a
// crawl indexes (IndexAdded) and as a backfill does.
func TestIndexWorkers(t *testing.T) {
	ctx := context.Background()
	arc, err := archive.Open(filepath.Join(t.TempDir(), "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	must(t, err)
	t.Cleanup(func() { arc.Close() })
	var added [][]search.Added
	must(t, searchtest.New(2, 300).Load(ctx, arc, 2, func(_ int, vs []archive.Version) error {
		var day []search.Added
		for _, v := range vs {
			day = append(day, search.Added{URL: v.URL, Time: v.Time})
		}
		added = append(added, day)
		return nil
	}))
	run := func(workers int) (crawl, backfill *sinkLog, st search.IndexStats) {
		crawl, backfill = &sinkLog{}, &sinkLog{}
		ix := &search.Indexer{Archive: arc, Sink: crawl, Workers: workers}
		for _, day := range added {
			for len(day) > 0 {
				n := min(len(day), 100)
				s, err := ix.IndexAdded(ctx, day[:n])
				must(t, err)
				st.Add(s)
				day = day[n:]
			}
		}
		ix.Sink = backfill
		s, err := ix.Backfill(ctx, arc, nil)
		must(t, err)
		st.Add(s)
		return crawl, backfill, st
	}
	c1, b1, s1 := run(1)
	c4, b4, s4 := run(4)
	if s1 != s4 || s1.Versions == 0 {
		t.Fatalf("stats with 4 workers %+v, with 1 %+v", s4, s1)
	}
	for _, c := range []struct {
		name   string
		w1, w4 *sinkLog
	}{{"crawl", c1, c4}, {"backfill", b1, b4}} {
		if len(c.w1.batches) != len(c.w4.batches) {
			t.Fatalf("%s: %d batches with 4 workers, %d with 1", c.name, len(c.w4.batches), len(c.w1.batches))
		}
		for i := range c.w1.batches {
			if !slices.Equal(c.w1.batches[i], c.w4.batches[i]) {
				t.Fatalf("%s: batch %d differs between 1 and 4 workers", c.name, i)
			}
		}
	}
}
