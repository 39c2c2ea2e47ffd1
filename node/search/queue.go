package search

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	fts "github.com/herod-archive/herod/search"
)

// Queue bounds: URLs waiting, URLs indexed in one batch, and the longest
// a URL waits for its batch to fill.
const (
	queueCap   = 8192
	batchURLs  = 256
	batchDelay = time.Second
	// catchUpRetry is the wait after a catch-up that failed.
	catchUpRetry = time.Minute
)

func (sv *Service) q() chan fts.Added {
	sv.queueOnce.Do(func() { sv.queue = make(chan fts.Added, cmp.Or(sv.QueueCap, queueCap)) })
	return sv.queue
}

// Notify queues the URL of a version the node just stored for indexing.
// It never blocks (archive.Store.OnAdd's contract): a full queue drops
// the URL, counted, and remembers its capture time; once the queue is
// empty, Run catches up on the versions captured since the earliest time
// dropped (fts.Indexer.CatchUp).
func (sv *Service) Notify(v archive.Version) {
	select {
	case sv.q() <- fts.Added{URL: v.URL, Time: v.Time}:
		sv.queued.Add(1)
	default:
		sv.dropped.Add(1)
		sv.lose(v.Time)
	}
}

// maxBehindPause bounds how long Behind pauses the crawl at once: an
// indexer that drains half of its queue no faster than that is stuck (a
// holder that stalls each delivery until its deadline), and the crawl
// goes on as before, the queue dropping what it cannot take for a
// catch-up, until the queue is down to a quarter again. A holder cannot
// hold up the crawl of the nodes that deliver to it.
const maxBehindPause = 10 * time.Second

// Behind reports whether indexing has fallen behind the versions the
// node stores: true from when half of the queue waits until no more
// than a quarter does, for at most maxBehindPause at once, and never
// while a backfill or a catch-up runs (each indexes what was stored
// meanwhile, the queue waits for them). The node pauses its crawl while
// it is true (crawl.Config.Paused), so that a crawl faster than its
// indexing does not fill the queue: a URL the full queue drops is
// indexed by a catch-up that reads every version stored since, most of
// them indexed already (at a million URLs a day on two cores, a flat-out
// day was indexed about one and a half times).
func (sv *Service) Behind() bool {
	sv.behindMu.Lock()
	defer sv.behindMu.Unlock()
	if sv.backfill.Load() == 1 || sv.catching.Load() == 1 {
		sv.behindSince = time.Time{}
		return false
	}
	n, capacity := sv.queued.Load(), int64(cap(sv.q()))
	now := time.Now()
	switch {
	case n <= capacity/4:
		sv.behindSince, sv.behindGaveUp = time.Time{}, false
	case sv.behindSince.IsZero() && !sv.behindGaveUp && n >= capacity/2:
		sv.behindSince = now
	case !sv.behindSince.IsZero() && now.Sub(sv.behindSince) > maxBehindPause:
		sv.behindSince, sv.behindGaveUp = time.Time{}, true
		sv.log().Warn("search indexing stays behind; the crawl goes on and leaves what the queue drops to a catch-up", "waiting", n)
	}
	return !sv.behindSince.IsZero()
}

// lose records that versions captured at t or later were not indexed.
func (sv *Service) lose(t time.Time) {
	ms := t.UnixMilli()
	for {
		old := sv.lostSince.Load()
		if old != 0 && old <= ms {
			return
		}
		if sv.lostSince.CompareAndSwap(old, ms) {
			return
		}
	}
}

// Run backfills the URLs of archive this node owns (indexing every
// version of each, which their terms' holders store once; only those
// Resume returns true for, when it is set), then indexes the queued URLs
// in batches until ctx ends. ix's Sink is the Service.
func (sv *Service) Run(ctx context.Context, ix *fts.Indexer, l fts.URLLister, owns func(key id.ID) bool) {
	sv.backfill.Store(1)
	start := time.Now()
	resume := sv.Resume
	atStart := sv.owned()
	st, err := ix.Backfill(ctx, l, func(u string) bool {
		k := id.OfString(u)
		return owns(k) && (resume == nil || resume(k))
	})
	sv.recordRanges(atStart, sv.owned())
	sv.backfillVersions.Store(int64(st.Versions))
	sv.backfilled.Store(err == nil)
	if st.Skipped > 0 {
		sv.skipped.Store(true)
	}
	sv.backfill.Store(0)
	sv.indexed.Add(int64(st.Versions))
	sv.unreadable.Add(int64(st.Unreadable))
	if err != nil && ctx.Err() == nil {
		sv.errs.Add(1)
		sv.log().Warn("search backfill", "err", err)
		if errors.Is(err, fts.ErrNotDelivered) {
			sv.lose(time.UnixMilli(1)) // all of it again, once holders answer
		}
	}
	sv.log().Debug("search backfill done", "versions", st.Versions, "postings", st.Postings, "took", time.Since(start))
	var urls []fts.Added
	var retry time.Time // no catch-up before: the last one failed
	timer := time.NewTimer(batchDelay)
	defer timer.Stop()
	flush := func() {
		if len(urls) > 0 {
			sv.indexBatch(ctx, ix, urls)
			urls = urls[:0]
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-sv.q():
			urls = append(urls, u)
			if len(urls) >= batchURLs {
				flush()
			}
		case <-timer.C:
			flush()
			if len(sv.q()) == 0 && time.Now().After(retry) && !sv.catchUp(ctx, ix, l, owns) {
				retry = time.Now().Add(catchUpRetry)
			}
			timer.Reset(batchDelay)
		}
	}
}

// indexBatch indexes urls, taken from the queue. A batch that fails
// to deliver is due to a catch-up; one the stop cuts short leaves the
// service unsettled (Settled).
func (sv *Service) indexBatch(ctx context.Context, ix *fts.Indexer, urls []fts.Added) {
	st, err := ix.IndexAdded(ctx, urls)
	sv.indexed.Add(int64(st.Versions))
	sv.unreadable.Add(int64(st.Unreadable))
	sv.queued.Add(-int64(len(urls)))
	switch {
	case err != nil && ctx.Err() != nil:
		for _, a := range urls {
			sv.lose(a.Time)
		}
	case err != nil:
		sv.errs.Add(1)
		sv.log().Warn("search index", "urls", len(urls), "err", err)
		if errors.Is(err, fts.ErrNotDelivered) {
			for _, a := range urls {
				sv.lose(a.Time) // caught up once the queue is empty
			}
		}
	}
}

// catchUp indexes the versions stored since the earliest one Notify
// dropped or a batch failed to deliver, if any. It reports false if the
// pass failed to deliver or list (it is then due again).
func (sv *Service) catchUp(ctx context.Context, ix *fts.Indexer, l fts.URLLister, owns func(key id.ID) bool) bool {
	sv.catching.Store(1)
	defer sv.catching.Store(0)
	ms := sv.lostSince.Swap(0)
	if ms == 0 {
		return true
	}
	sv.catchUps.Add(1)
	st, err := ix.CatchUp(ctx, l, time.UnixMilli(ms), func(u string) bool { return owns(id.OfString(u)) })
	if st.Skipped > 0 {
		sv.skipped.Store(true)
	}
	sv.indexed.Add(int64(st.Versions))
	sv.unreadable.Add(int64(st.Unreadable))
	if err != nil && ctx.Err() != nil {
		sv.lose(time.UnixMilli(ms)) // due again at the next start: not Settled
		return true
	}
	if err == nil {
		return true
	}
	sv.errs.Add(1)
	sv.log().Warn("search catch-up", "since", time.UnixMilli(ms), "err", err)
	if st.Skipped > 0 && !errors.Is(err, fts.ErrNotDelivered) {
		return true // only unreadable URLs: indexing again would not help
	}
	sv.lose(time.UnixMilli(ms))
	return false
}

// Idle reports whether the node has indexed every version it was told
// of (or found it unreadable): nothing queued, no backfill or catch-up
// running, none due. A catch-up due after a failure keeps it false until
// one succeeds.
func (sv *Service) Idle() bool {
	return sv.queued.Load() == 0 && sv.catching.Load() == 0 && sv.lostSince.Load() == 0 && sv.backfill.Load() == 0
}

// Settled reports whether the node's index holds every version it
// stored: the start's backfill finished, nothing is queued or due to a
// catch-up, no batch was cut short, no pass skipped a URL it could not
// read (a start indexes it again, repaired or not). Called once Run has
// returned and the archive takes no more writes, it says whether a stop
// may leave a Mark.
func (sv *Service) Settled() bool {
	return sv.backfilled.Load() && !sv.skipped.Load() && sv.Idle()
}

// Stats are a node's index health.
type Stats struct {
	fts.Counts
	Backlog    int64 `json:"backlog"`    // URLs waiting to be indexed
	Dropped    int64 `json:"dropped"`    // URLs the full queue dropped, left to a catch-up
	CatchUps   int64 `json:"catchUps"`   // catch-up passes run (Indexer.CatchUp)
	Backfill   bool  `json:"backfill"`   // the backfill is running
	Indexed    int64 `json:"indexed"`    // versions indexed since start
	Errors     int64 `json:"errors"`     // indexing batches that failed
	Unreadable int64 `json:"unreadable"` // versions whose text could not be read (broken PDF)
	Sent       int64 `json:"sent"`       // postings delivered to holders
	SentBytes  int64 `json:"sentBytes"`  // posting bytes sent to other nodes
	Received   int64 `json:"received"`   // postings received from other nodes
	Refused    int64 `json:"refused"`    // postings of other nodes refused: the store held MaxPostings
	Queries    int64 `json:"queries"`    // posting queries answered for other nodes
	FailedSend int64 `json:"failedSend"` // deliveries to a holder that failed

	// The start's backfill: it finished, the last clean stop's mark
	// limited it (mark.go), the versions it indexed.
	Backfilled       bool  `json:"backfilled"`
	Resumed          bool  `json:"resumed"`
	BackfillVersions int64 `json:"backfillVersions"`

	// Sync counts the posting sync between holders (syncround.go).
	Sync SyncStats `json:"sync"`
}

// Stats returns the index health.
func (sv *Service) Stats() Stats {
	return Stats{
		Counts:  sv.Store.Counts(),
		Backlog: sv.queued.Load(), Dropped: sv.dropped.Load(), CatchUps: sv.catchUps.Load(), Backfill: sv.backfill.Load() == 1,
		Backfilled: sv.backfilled.Load(), Resumed: sv.Resume != nil, BackfillVersions: sv.backfillVersions.Load(),
		Indexed: sv.indexed.Load(), Errors: sv.errs.Load(), Unreadable: sv.unreadable.Load(),
		Sent: sv.sent.Load(), SentBytes: sv.sentBytes.Load(), Received: sv.received.Load(),
		Refused: sv.refused.Load(), Queries: sv.served.Load(), FailedSend: sv.failed.Load(),
		Sync: sv.SyncStats(),
	}
}
