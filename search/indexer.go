package search

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
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

// End ends the versions the Store holds postings of (Store.End).
func (s StoreSink) End(ctx context.Context, ends []End) ([]End, error) {
	return s.Store.End(ctx, ends)
}

var (
	_ Ender = StoreSink{}
	_ Ender = (*Store)(nil)
)

// End says that a version (its URL's key and capture time, Unix ms)
// ends at To.
type End struct {
	Key  id.ID
	URL  string
	From int64
	To   int64
}

// Ender is a Sink that ends a version it holds by its identity alone,
// as sending its postings again with the end would: the indexer then
// need not read and analyze a changed page's previous version again.
// End returns, untouched, the versions it holds no postings of, whose
// postings the indexer sends instead.
type Ender interface {
	End(ctx context.Context, ends []End) (unknown []End, err error)
}

// Indexer turns archived versions into postings: each indexable version
// gives one posting per distinct term, live from its capture time to the
// next version's (a 404, a redirect or any unindexable version ends it),
// sent to Sink; its document row goes to Docs.
type Indexer struct {
	Archive Versions
	Sink    Sink
	Docs    *Store
	// Workers is how many URLs are read and analyzed at once (0:
	// GOMAXPROCS, at most 4); postings are sent in the URLs' order
	// whatever it is.
	Workers int
}

// workers returns the URLs read and analyzed at once.
func (ix *Indexer) workers() int {
	if ix.Workers > 0 {
		return ix.Workers
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// wantFunc selects which of a URL's versions (sorted by capture time)
// to index, and how.
type wantFunc func(vs []archive.Version, i int) want

// want is what indexing does with a version.
type want int

const (
	wantNone want = iota
	wantAll       // read and analyze it, send its postings and row
	// wantEnd: only its end is new (it was indexed before, and the
	// version after it was just added): a Sink that is an Ender ends it
	// by identity, else it is read and analyzed (wantAll).
	wantEnd
)

// wantIf is wantAll if ok, else wantNone.
func wantIf(ok bool) want {
	if ok {
		return wantAll
	}
	return wantNone
}

// collectURLs adds to b the postings and rows of urls, want[i] choosing
// urls[i]'s versions, reading and analyzing ix.workers() URLs at once;
// they are added in urls' order. It returns the stats of the URLs that
// succeeded and the error of each URL (nil if none).
func (ix *Indexer) collectURLs(ctx context.Context, urls []string, want func(i int) wantFunc, b *batch) (IndexStats, []error) {
	type result struct {
		st  IndexStats
		b   batch
		err error
	}
	res := make([]result, len(urls))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(ix.workers(), len(urls)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(urls) {
					return
				}
				r := &res[i]
				r.st, r.err = ix.collectWhere(ctx, urls[i], &r.b, want(i))
			}
		})
	}
	wg.Wait()
	var total IndexStats
	errs := make([]error, len(urls))
	var nps, nrows, nends int
	for _, r := range res {
		nps, nrows, nends = nps+len(r.b.ps), nrows+len(r.b.rows), nends+len(r.b.ends)
	}
	b.ps = slices.Grow(b.ps, nps)
	b.rows = slices.Grow(b.rows, nrows)
	b.ends = slices.Grow(b.ends, nends)
	for i, r := range res {
		if r.err != nil {
			errs[i] = r.err
			continue
		}
		total.Add(r.st)
		b.ps = append(b.ps, r.b.ps...)
		b.rows = append(b.rows, r.b.rows...)
		b.ends = append(b.ends, r.b.ends...)
	}
	return total, errs
}

// IndexStats counts what an indexing call did.
type IndexStats struct {
	Versions int // indexable versions read and analyzed
	Postings int // postings sent
	// Unreadable counts versions skipped because their text could not
	// be read (ErrUnreadable: a broken or hostile PDF).
	Unreadable int
	// Skipped counts the URLs a backfill or catch-up left out because
	// their versions could not be read (the error names them).
	Skipped int
	// Ended counts the versions ended by identity (Ender), neither read
	// nor analyzed again.
	Ended int
}

// Add adds s2 to s.
func (s *IndexStats) Add(s2 IndexStats) {
	s.Versions += s2.Versions
	s.Postings += s2.Postings
	s.Unreadable += s2.Unreadable
	s.Skipped += s2.Skipped
	s.Ended += s2.Ended
}

// IndexURL indexes url's versions: all of them (backfill, all true), or
// the newest two (a version just stored: the newest starts its postings,
// the one before has its own ended). Sending a posting again is harmless.
func (ix *Indexer) IndexURL(ctx context.Context, url string, all bool) (IndexStats, error) {
	var b batch
	st, err := ix.collect(ctx, url, all, &b)
	if err != nil {
		return IndexStats{}, err
	}
	fst, err := ix.flush(ctx, &b)
	st.Add(fst)
	return st, err
}

// IndexURLs indexes the newest two versions of each URL (IndexURL) and
// sends all their postings in one call to Sink. A URL that fails is
// left out, and its error joined to the one returned.
func (ix *Indexer) IndexURLs(ctx context.Context, urls []string) (IndexStats, error) {
	added := make([]Added, len(urls))
	for i, u := range urls {
		added[i] = Added{URL: u}
	}
	return ix.IndexAdded(ctx, added)
}

// ErrNotDelivered is the error of an indexing call whose postings the
// Sink did not take (no holder reached): indexing those versions again
// later is worth it, unlike a version that cannot be read.
var ErrNotDelivered = errors.New("postings not delivered")

// Added names a version just stored: its URL and capture time.
type Added struct {
	URL  string
	Time time.Time
}

// IndexAdded indexes the versions just stored and the ones next to
// them: for each URL, its newest two versions (a crawl's new version
// starts its postings and ends the one before's), every version added
// and the version just before each (an import can add a capture older
// than those held: it ends at the next one, and the one before it now
// ends at it). All their postings go in one call to Sink. A version
// only ended (the one before a version added, not added itself) is
// ended by identity if Sink is an Ender that holds it, not read again.
// A URL that fails is left out, and its error joined to the one
// returned.
func (ix *Indexer) IndexAdded(ctx context.Context, added []Added) (IndexStats, error) {
	byURL := map[string][]int64{}
	var order []string
	for _, a := range added {
		if _, ok := byURL[a.URL]; !ok {
			order = append(order, a.URL)
		}
		byURL[a.URL] = append(byURL[a.URL], Millis(a.Time))
	}
	var b batch
	total, errs := ix.collectURLs(ctx, order, func(i int) wantFunc {
		times := byURL[order[i]]
		return func(vs []archive.Version, i int) want {
			added := slices.Contains(times, Millis(vs[i].Time))
			switch {
			case added || i == len(vs)-1:
				return wantAll
			case i+1 < len(vs) && slices.Contains(times, Millis(vs[i+1].Time)):
				return wantEnd
			}
			return wantIf(i >= len(vs)-2)
		}
	}, &b)
	st, err := ix.flush(ctx, &b)
	if err != nil {
		return IndexStats{}, err
	}
	total.Add(st)
	return total, errors.Join(errs...)
}

// batch is postings and document rows waiting to be written together,
// and the versions to end by identity.
type batch struct {
	ps   []Posting
	rows []DocRow
	ends []endVersion
}

// endVersion is a version to end by identity: its version and end.
type endVersion struct {
	v        archive.Version
	from, to int64
}

// flush ends a batch's versions by identity, sends its postings (with
// those of the versions the Ender did not hold) and writes its rows. It
// returns what indexing the versions the Ender did not hold did.
func (ix *Indexer) flush(ctx context.Context, b *batch) (IndexStats, error) {
	st, err := ix.endAll(ctx, b)
	if err != nil {
		return st, err
	}
	if len(b.ps) > 0 {
		if err := ix.Sink.Add(ctx, b.ps); err != nil {
			return st, fmt.Errorf("search index: %w: %w", ErrNotDelivered, err)
		}
	}
	if ix.Docs != nil && len(b.rows) > 0 {
		if err := ix.Docs.PutDocs(ctx, b.rows); err != nil {
			return st, fmt.Errorf("search index: %w", err)
		}
	}
	b.ps, b.rows, b.ends = b.ps[:0], b.rows[:0], b.ends[:0]
	return st, nil
}

// endAll ends b's versions to end through the Sink (an Ender) and the
// document table (Docs, unless it is the Sink's own Store), and adds to
// b the postings and rows of those either did not hold, read and
// analyzed. A version that cannot be read is left out (an unreadable
// one counted).
func (ix *Indexer) endAll(ctx context.Context, b *batch) (IndexStats, error) {
	var st IndexStats
	if len(b.ends) == 0 {
		return st, nil
	}
	ends := make([]End, len(b.ends))
	for i, e := range b.ends {
		ends[i] = End{Key: e.v.Key, URL: e.v.URL, From: e.from, To: e.to}
	}
	type ident struct {
		key  id.ID
		from int64
	}
	missed := map[ident]bool{}
	for _, en := range ix.enders() {
		unknown, err := en.End(ctx, ends)
		if err != nil {
			return st, fmt.Errorf("search index: %w: %w", ErrNotDelivered, err)
		}
		for _, u := range unknown {
			missed[ident{u.Key, u.From}] = true
		}
	}
	for _, e := range b.ends {
		if !missed[ident{e.v.Key, e.from}] {
			st.Ended++
			continue
		}
		vst, err := ix.indexVersion(ctx, e.v, e.from, e.to, b)
		if err != nil {
			continue // as a backfill skips a version it cannot read
		}
		st.Add(vst)
	}
	return st, nil
}

// enders returns what ends versions by identity: the Sink and the
// document table (if it is not the Sink's Store), or nil if the Sink
// is not an Ender.
func (ix *Indexer) enders() []Ender {
	en, ok := ix.Sink.(Ender)
	if !ok {
		return nil
	}
	out := []Ender{en}
	if ss, ok := ix.Sink.(StoreSink); ix.Docs != nil && (!ok || ss.Store != ix.Docs) {
		out = append(out, ix.Docs)
	}
	return out
}

// collect adds url's postings and rows (IndexURL) to b.
func (ix *Indexer) collect(ctx context.Context, url string, all bool, b *batch) (IndexStats, error) {
	return ix.collectWhere(ctx, url, b, func(vs []archive.Version, i int) want {
		return wantIf(all || i >= len(vs)-2)
	})
}

// collectWhere adds to b the postings and rows of url's versions (sorted
// by capture time) that want accepts.
func (ix *Indexer) collectWhere(ctx context.Context, url string, b *batch, want wantFunc) (IndexStats, error) {
	vs, err := ix.Archive.Versions(ctx, url)
	if err != nil {
		return IndexStats{}, fmt.Errorf("search index %s: %w", url, err)
	}
	vs = slices.Clone(vs)
	slices.SortStableFunc(vs, func(a, b archive.Version) int { return a.Time.Compare(b.Time) })
	var st IndexStats
	ender := ix.enders() != nil
	for i := range vs {
		w := want(vs, i)
		if w == wantNone {
			continue
		}
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
		if w == wantEnd && ender && to != Open {
			b.ends = append(b.ends, endVersion{v: v, from: from, to: to})
			continue
		}
		vst, err := ix.indexVersion(ctx, v, from, to, b)
		if err != nil {
			return st, err
		}
		st.Add(vst)
	}
	return st, nil
}

// indexVersion reads and analyzes version v, live from from to to,
// and adds its postings and document row to b.
func (ix *Indexer) indexVersion(ctx context.Context, v archive.Version, from, to int64, b *batch) (IndexStats, error) {
	var st IndexStats
	c, err := ix.Archive.Read(ctx, v)
	if err != nil {
		return st, fmt.Errorf("search index %s: %w", v.URL, err)
	}
	d, err := ExtractCaptureDoc(c)
	if err != nil {
		if errors.Is(err, ErrUnreadable) {
			st.Unreadable++
		}
		return st, nil
	}
	vp := VersionPostings(v.URL, v.Key, from, to, d)
	if len(vp) == 0 {
		return st, nil
	}
	st.Versions++
	st.Postings += len(vp)
	if b.ps == nil {
		b.ps = vp // this call's own: no copy
	} else {
		b.ps = append(b.ps, vp...)
	}
	b.rows = append(b.rows, DocRow{Key: v.Key, URL: v.URL, From: from, To: to, DocLen: vp[0].DocLen})
	return st, nil
}

// backfillBatch is how many postings a backfill writes in one synced
// batch.
const backfillBatch = 50_000

// Backfill indexes every version of every URL the archive lists, writing
// postings in synced batches of about backfillBatch, and returns what it
// did. owns, if set, limits it to the URLs it accepts
// (those this node holds as their owner).
func (ix *Indexer) Backfill(ctx context.Context, l URLLister, owns func(url string) bool) (IndexStats, error) {
	return ix.backfill(ctx, l, owns, func([]archive.Version, int) want { return wantAll })
}

// CatchUp is Backfill for the versions captured at or after since and
// the version just before each (it ends at them): what a node indexes
// again when versions stored since then were not indexed (a full queue,
// holders out of reach). It reads every listed URL's versions but
// indexes only those.
func (ix *Indexer) CatchUp(ctx context.Context, l URLLister, since time.Time, owns func(url string) bool) (IndexStats, error) {
	return ix.backfill(ctx, l, owns, func(vs []archive.Version, i int) want {
		return wantIf(!vs[i].Time.Before(since) || (i+1 < len(vs) && !vs[i+1].Time.Before(since)))
	})
}

// backfillChunk is how many listed URLs a backfill reads and analyzes
// together (Workers at once).
const backfillChunk = 64

func (ix *Indexer) backfill(ctx context.Context, l URLLister, owns func(url string) bool, want wantFunc) (IndexStats, error) {
	var total IndexStats
	var b batch
	var skipped []error // URLs whose versions could not be read: skipped
	var chunk []string
	collect := func() error {
		st, errs := ix.collectURLs(ctx, chunk, func(int) wantFunc { return want }, &b)
		chunk = chunk[:0]
		total.Add(st)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, err := range errs {
			if err == nil {
				continue
			}
			if len(skipped) < 8 {
				skipped = append(skipped, err)
			}
			total.Skipped++
		}
		if len(b.ps) >= backfillBatch {
			st, err := ix.flush(ctx, &b)
			total.Add(st)
			return err
		}
		return nil
	}
	err := l.URLs(ctx, archive.Query{}, func(u string) error {
		if owns != nil && !owns(u) {
			return nil
		}
		if chunk = append(chunk, u); len(chunk) < backfillChunk {
			return nil
		}
		return collect()
	})
	if err == nil {
		err = collect()
	}
	if err == nil {
		var st IndexStats
		st, err = ix.flush(ctx, &b)
		total.Add(st)
	}
	return total, errors.Join(append([]error{err}, skipped...)...)
}
