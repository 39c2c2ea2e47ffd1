package search

import (
	"context"
	"fmt"
	"slices"

	"github.com/herod-archive/herod/archive"
)

// Versions is what the indexer reads from the archive: a URL's versions
// and a version's capture.
type Versions interface {
	Versions(ctx context.Context, url string) ([]archive.Version, error)
	Read(ctx context.Context, v archive.Version) (*archive.Capture, error)
}

// URLLister enumerates the archive's URLs, for the backfill.
type URLLister interface {
	URLs(ctx context.Context, q archive.Query, fn func(url string) error) error
}

// Sink takes postings to their holders: the local Store on a lone node,
// the ring's posting sender on a ring member. Add returns once they are
// durable where they go (or queued durably for them).
type Sink interface {
	Add(ctx context.Context, ps []Posting) error
}

// StoreSink is a Sink that keeps every posting in one Store.
type StoreSink struct{ Store *Store }

// Add stores ps.
func (s StoreSink) Add(ctx context.Context, ps []Posting) error { return s.Store.Put(ctx, ps) }

// Indexer turns archived versions into postings: each indexable version
// gives one posting per distinct term, live from its capture time to the
// next version's (a 404, a redirect or any unindexable version ends it),
// sent to Sink; its document row goes to Docs.
type Indexer struct {
	Archive Versions
	Sink    Sink
	Docs    *Store
}

// IndexStats counts what an indexing call did.
type IndexStats struct {
	Versions int   // indexable versions read and analyzed
	Postings int   // postings sent
	Bytes    int64 // encoded posting bytes sent
}

// Add adds s2 to s.
func (s *IndexStats) Add(s2 IndexStats) {
	s.Versions += s2.Versions
	s.Postings += s2.Postings
	s.Bytes += s2.Bytes
}

// IndexURL indexes url's versions: all of them (backfill, all true), or
// the newest two (a version just stored: the newest starts its postings,
// the one before has its own ended). Sending a posting again is harmless.
func (ix *Indexer) IndexURL(ctx context.Context, url string, all bool) (IndexStats, error) {
	vs, err := ix.Archive.Versions(ctx, url)
	if err != nil {
		return IndexStats{}, fmt.Errorf("search index %s: %w", url, err)
	}
	vs = slices.Clone(vs)
	slices.SortStableFunc(vs, func(a, b archive.Version) int { return a.Time.Compare(b.Time) })
	first := 0
	if !all && len(vs) > 2 {
		first = len(vs) - 2
	}
	var st IndexStats
	var rows []DocRow
	var ps []Posting
	for i := first; i < len(vs); i++ {
		v := vs[i]
		if !Indexable(v.Status, v.ContentType) {
			continue
		}
		to := Open
		if i+1 < len(vs) {
			to = Millis(vs[i+1].Time)
		}
		from := Millis(v.Time)
		if to != Open && to <= from {
			continue // replaced within its millisecond: never live
		}
		c, err := ix.Archive.Read(ctx, v)
		if err != nil {
			return st, fmt.Errorf("search index %s: %w", url, err)
		}
		d, ok := ExtractCapture(c)
		if !ok {
			continue
		}
		vp := VersionPostings(v.URL, v.Key, from, to, d)
		if len(vp) == 0 {
			continue
		}
		st.Versions++
		ps = append(ps, vp...)
		rows = append(rows, DocRow{Key: v.Key, URL: v.URL, From: from, To: to, DocLen: vp[0].DocLen})
	}
	if len(ps) == 0 {
		return st, nil
	}
	for _, p := range ps {
		st.Bytes += int64(len(p.AppendBinary(nil)))
	}
	st.Postings = len(ps)
	if err := ix.Sink.Add(ctx, ps); err != nil {
		return IndexStats{}, fmt.Errorf("search index %s: %w", url, err)
	}
	if ix.Docs != nil {
		if err := ix.Docs.PutDocs(ctx, rows); err != nil {
			return IndexStats{}, fmt.Errorf("search index %s: %w", url, err)
		}
	}
	return st, nil
}

// Backfill indexes every version of every URL the archive lists, and
// returns what it did. owns, if set, limits it to the URLs it accepts
// (those this node holds as their owner).
func (ix *Indexer) Backfill(ctx context.Context, l URLLister, owns func(url string) bool) (IndexStats, error) {
	var total IndexStats
	err := l.URLs(ctx, archive.Query{}, func(u string) error {
		if owns != nil && !owns(u) {
			return nil
		}
		st, err := ix.IndexURL(ctx, u, true)
		total.Add(st)
		return err
	})
	return total, err
}
