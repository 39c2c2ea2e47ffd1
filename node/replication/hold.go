package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/replicate"
)

// holdingLocal is the store a hand-off's copy (replicate.Copy) fills: a
// record is verified as Import verifies it (importIf) and kept in the
// held area, not imported; one this node fetched itself is imported at
// once. It holds what the archive or the held area holds.
type holdingLocal struct {
	replicate.Local
	r      *Replicator
	sender string

	mu     sync.Mutex
	fresh  []heldRecord    // newly held: their URLs are fetched by this node
	taken  []archive.Entry // imported (this node's own captures): queued for the push
	refuse int64           // refused for a full hold
}

// Holds implements replicate.Holder.
func (l *holdingLocal) Holds(ctx context.Context, e archive.Entry) (bool, error) {
	if l.r.cfg.Held.Has(e) {
		return true, nil
	}
	if h, ok := l.Local.(replicate.Holder); ok {
		return h.Holds(ctx, e)
	}
	return false, nil
}

// Import implements replicate.Local: it holds the record.
func (l *holdingLocal) Import(ctx context.Context, name string, data []byte) (archive.Version, bool, error) {
	// This node's own capture (a copy it lost, its own signature) is
	// imported; any other is verified and held.
	v, added, err := l.r.importIf(ctx, l.Local, name, data, func(v archive.Version) bool { return v.Peer == l.r.self() })
	if !errors.Is(err, archive.ErrNotTaken) {
		if err == nil && added {
			l.mu.Lock()
			l.taken = append(l.taken, v.Entry())
			l.mu.Unlock()
		}
		return v, added, err
	}
	rec := heldRecord{Entry: v.Entry(), URL: v.URL, Status: v.Status, Fetcher: v.Peer, Sender: l.sender, At: time.Now()}
	added, err = l.r.cfg.Held.add(rec, data)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, ErrHoldFull):
		l.refuse++
	case added:
		l.fresh = append(l.fresh, rec)
	}
	return v, added, err
}

var _ replicate.Holder = (*holdingLocal)(nil)

// Confirm tells the replicator that this node's own fetch of url stored,
// or confirmed (a 304, an unchanged payload), a payload of status and
// digest. The records held for url with that payload are released:
// imported as replica copies are (keeping their fetcher and capture time;
// the store witnesses them) and queued for the push to the range's
// replicas. A record that no longer verifies (its fetcher purged since)
// is dropped; one the store cannot take now stays held. Without a held
// record of url it costs a map look-up; safe for concurrent use.
func (r *Replicator) Confirm(ctx context.Context, url string, status int, digest id.ID) {
	h := r.cfg.Held
	if h == nil {
		return
	}
	for _, rec := range h.claim(id.OfString(url), status, digest) {
		data, err := h.read(rec.Entry)
		if err != nil {
			err = fmt.Errorf("%w: %w", errHeldGone, err)
		}
		var v archive.Version
		if err == nil {
			v, _, err = r.cfg.Local.Import(ctx, rec.Entry.Name(), data)
		}
		switch {
		case err == nil:
			h.done(rec.Entry, true)
			r.mu.Lock()
			r.st.HandOff.Released++
			r.queueTakenLocked([]archive.Entry{v.Entry()}, time.Now())
			r.mu.Unlock()
			r.log.Debug("replication hold: released a handed-off record", "url", rec.URL, "fetcher", rec.Fetcher,
				"sender", rec.Sender, "held", time.Since(rec.At).Round(time.Millisecond))
		case errors.Is(err, archive.ErrCorrupt) || errors.Is(err, archive.ErrSignerShare) ||
			errors.Is(err, archive.ErrRangeShare) || errors.Is(err, errHeldGone):
			h.done(rec.Entry, true)
			r.mu.Lock()
			r.st.HandOff.Dropped++
			r.mu.Unlock()
			r.log.Warn("replication hold: dropped a confirmed record the store refuses", "url", rec.URL,
				"fetcher", rec.Fetcher, "sender", rec.Sender, "err", err)
		default:
			h.done(rec.Entry, false)
			r.fail(fmt.Errorf("hand-off release of %s: %w", rec.URL, err))
		}
	}
}

// HoldsURL reports whether this node holds a handed-off record of url,
// waiting for its own fetch (a fetch the day's claims must not skip).
func (r *Replicator) HoldsURL(url string) bool {
	return r.cfg.Held != nil && r.cfg.Held.HasKey(id.OfString(url))
}

// errHeldGone wraps a held record whose file cannot be read.
var errHeldGone = errors.New("held record unreadable")

// ExpireHeld drops the held records accepted more than HoldLimits.For
// before now, none of which an own fetch confirmed: the page changed
// since its fetcher's capture, or the capture was made up. Each is logged
// and counted (HandOffStats.Expired); its sender keeps its copy. Rounds
// call it with the clock; it returns how many it dropped.
func (r *Replicator) ExpireHeld(now time.Time) int {
	h := r.cfg.Held
	if h == nil {
		return 0
	}
	recs := h.expired(now)
	for _, rec := range recs {
		h.done(rec.Entry, true)
		r.log.Info("replication hold: dropped a handed-off record no own fetch confirmed", "url", rec.URL,
			"fetcher", rec.Fetcher, "sender", rec.Sender, "since", rec.At.UTC().Format(time.RFC3339))
	}
	r.mu.Lock()
	r.st.HandOff.Expired += int64(len(recs))
	r.mu.Unlock()
	return len(recs)
}

// OnRecheck sets the function that queues urls for this node's crawler
// to fetch now, through its queue and politeness (crawl.Crawler.Recheck):
// the URLs of the records it holds; the node then calls Confirm with what
// each fetch found. Until it is set, held records wait for the daily
// crawl.
func (r *Replicator) OnRecheck(fn func(ctx context.Context, urls []string) error) {
	r.recheckFn.Store(&fn)
}

// recheck has this node's crawler fetch urls soon (OnRecheck), counted;
// a failure is counted and kept as the last error (the daily crawl
// fetches every URL the node owns anyway).
func (r *Replicator) recheck(ctx context.Context, urls []string) {
	fn := r.recheckFn.Load()
	if fn == nil || len(urls) == 0 {
		return
	}
	err := (*fn)(ctx, urls)
	r.mu.Lock()
	r.st.HandOff.Rechecks += int64(len(urls))
	r.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		r.fail(fmt.Errorf("hand-off: queue %d URLs for this node's fetch: %w", len(urls), err))
	}
}

// recheckHeld has the crawler fetch the URL of every held record once
// more (at start: a crash may have come between a hold and its queueing).
func (r *Replicator) recheckHeld(ctx context.Context) {
	if r.cfg.Held != nil {
		r.recheck(ctx, r.cfg.Held.URLs())
	}
}

// queueTakenLocked queues es, records this node now stores for its
// range, for the push to the range's replicas. The caller holds r.mu.
func (r *Replicator) queueTakenLocked(es []archive.Entry, now time.Time) {
	for _, e := range es {
		if len(r.pq.recs) >= r.queueLen {
			r.st.Push.Dropped++
			r.pq.overflow = true // the push repairs the range once its queues drain
			continue
		}
		if r.pq.fresh() {
			r.pq.since = now
		}
		r.pq.recs = append(r.pq.recs, pushed{e: e, at: now})
		r.st.HandOff.Taken++
	}
	if len(es) > 0 {
		r.wakePush()
	}
}
