package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// Sync settings.
const (
	// DefaultSyncInterval is Service.SyncInterval's default: the period
	// of posting sync rounds.
	DefaultSyncInterval = 30 * time.Second
	// SyncSettle is how long after a change of a local virtual server's
	// range or successors a round runs, if sooner than the next one.
	SyncSettle = time.Second

	syncSplit      = 16               // parts a differing range is cut into
	syncLeaf       = 256              // a part the peer holds at most this many postings of is listed
	maxSyncDepth   = 6                // below this many splits, differing parts are listed whatever they hold
	maxLevelRanges = 1024             // differing parts followed at one depth (the rest wait for the next round)
	maxPullRound   = 1 << 20          // postings pulled from one peer for one range in one sync
	maxKnownSet    = 1 << 18          // local postings remembered to skip what a listed part repeats (else all are merged)
	pullQueue      = 64               // pull requests waiting
	syncDuty       = 19               // a round waits at least this many times its length after it
	maxRest        = 10 * time.Minute // ... of its wall time, which a peer that stalls can stretch
	maxScanRest    = 2 * time.Hour    // ... of the time its own digests scanned this store

	// SyncQuiet is how long no postings may have been stored (pushed
	// by an indexer, or this node's own) before a due round runs: while
	// pushes are current the holders differ by the batches in flight,
	// which the pushes deliver anyway, and a round would split and list
	// ranges for nothing. A round is put off so at most SyncMaxDefer: a
	// ring that crawls all day syncs once an hour. Each round while the
	// stores write scans them for its digests and for its peers' (a
	// digest is kept only until the store writes), a cost that grows
	// with the index: at 5 min it took 70 of a 100 K ring day's 176
	// CPU-s (docs/scale.md). A holder that missed a batch has it at the
	// next round: within SyncQuiet of the crawl's pause, or the hour.
	SyncQuiet    = 5 * time.Second
	SyncMaxDefer = time.Hour
	// maxBackoff bounds the period's growth: after a round that found
	// every pair in sync the period doubles, up to this many times
	// SyncInterval; a ring change, a pull or a difference resets it.
	maxBackoff = 8
)

// pullJob is a pull request a range's owner made of this node.
type pullJob struct {
	r KeyRange
	c ring.Contact
}

// SyncRound compares each range this node owns with each of the range's
// other holders and pulls what this node lacks; then it asks each holder
// whose digest differed, or every one if this node pulled anything, to
// pull the range from this node (a pull request, which the holder checks
// and queues). So one round leaves every holder of a range with the
// union of what they held. In sync, a pair costs one request of two
// small frames.
func (sv *Service) SyncRound(ctx context.Context) error {
	_, _, err := sv.syncRound(ctx)
	return err
}

// syncRound is SyncRound; settled reports that every pair compared was
// in sync (or there was none) and nothing was pulled or failed, scanned
// how long this node's digests of its ranges took (scans of the store).
func (sv *Service) syncRound(ctx context.Context) (settled bool, scanned time.Duration, err error) {
	sv.roundMu.Lock()
	defer sv.roundMu.Unlock()
	var errs []error
	fail := func(err error) {
		sv.syncErrs.Add(1)
		errs = append(errs, err)
	}
	// This node's digests of its ranges, from one scan of the store,
	// taken when a range first has another holder to compare with (a
	// lone node never scans) and again only once a pull stored something.
	var vs []ring.Node
	var rs []KeyRange
	for _, v := range sv.Ring.Vnodes() {
		if p, ok := sv.Ring.Predecessor(v.ID); ok {
			vs, rs = append(vs, v), append(rs, KeyRange{From: p.ID, To: v.ID})
		}
	}
	if len(rs) == 0 {
		return true, 0, nil
	}
	var tops []RangeSum
	var mark int64
	unsettled := false
	for i, v := range vs {
		r := rs[i]
		before := sv.synced.Load()
		var differ []ring.Contact
		for _, c := range sv.holders(ctx, v) {
			if c.Peer == sv.Self.Peer {
				continue
			}
			if tops == nil || sv.synced.Load() != mark {
				mark = sv.synced.Load()
				var err error
				t0 := time.Now()
				tops, err = sv.rangeSums(ctx, rs)
				scanned += time.Since(t0)
				if err != nil {
					return false, scanned, errors.Join(append(errs, fmt.Errorf("search sync: digests of this node's ranges: %w", err))...)
				}
			}
			equal, err := sv.pullFrom(ctx, c, r, &tops[i])
			switch {
			case err != nil:
				fail(err)
			case equal:
				sv.inSync.Add(1)
			}
			if !equal {
				differ = append(differ, c)
			}
			if ctx.Err() != nil {
				return false, scanned, ctx.Err()
			}
		}
		if sv.synced.Load() != before {
			differ = differ[:0]
			for _, c := range sv.holders(ctx, v) {
				if c.Peer != sv.Self.Peer {
					differ = append(differ, c)
				}
			}
		}
		if len(differ) > 0 {
			unsettled = true
		}
		for _, c := range differ {
			if _, _, err := sv.syncCall(ctx, c, syncRequest{Op: opPull, Ranges: []KeyRange{r}}); err != nil {
				fail(err)
			}
		}
	}
	return !unsettled && len(errs) == 0, scanned, errors.Join(errs...)
}

// pullRange pulls from c the postings of range r (which this node holds)
// that this node lacks or holds with another end: it compares the two
// digests of r, then of the 16 parts of each part that differs, and lists
// a differing part once c holds at most syncLeaf postings of it, or this
// node none. It reports whether the digests of r were equal.
func (sv *Service) pullRange(ctx context.Context, c ring.Contact, r KeyRange) (bool, error) {
	return sv.pullFrom(ctx, c, r, nil)
}

// pullFrom is pullRange with this node's digest of r, if known.
func (sv *Service) pullFrom(ctx context.Context, c ring.Contact, r KeyRange, top *RangeSum) (bool, error) {
	level := []KeyRange{r}
	budget := maxPullRound
	for depth := 0; len(level) > 0 && budget > 0; depth++ {
		theirs, err := sv.remoteSums(ctx, c, level)
		if err != nil {
			return false, err
		}
		var ours []RangeSum
		if depth == 0 && top != nil {
			ours = []RangeSum{*top}
		} else if ours, err = sv.rangeSums(ctx, level); err != nil {
			return false, err
		}
		if depth == 0 && theirs[0] == ours[0] {
			return true, nil
		}
		var next, list []KeyRange
		for i, part := range level {
			switch {
			case theirs[i] == ours[i] || theirs[i].Count == 0:
			case theirs[i].Count <= syncLeaf || ours[i].Count == 0 || depth == maxSyncDepth:
				list = append(list, part)
			default:
				next = append(next, split(part, syncSplit)...)
			}
		}
		for len(list) > 0 && budget > 0 {
			n := min(len(list), maxSyncRanges)
			if err := sv.pullParts(ctx, c, r, list[:n], &budget); err != nil {
				return false, err
			}
			list = list[n:]
		}
		level = next[:min(len(next), maxLevelRanges)]
	}
	return false, nil
}

// remoteSums asks c for the digests of rs, maxSyncRanges a request.
func (sv *Service) remoteSums(ctx context.Context, c ring.Contact, rs []KeyRange) ([]RangeSum, error) {
	out := make([]RangeSum, 0, len(rs))
	for len(rs) > 0 {
		n := min(len(rs), maxSyncRanges)
		rep, _, err := sv.syncCall(ctx, c, syncRequest{Op: opSums, Ranges: rs[:n]})
		if err != nil {
			return nil, err
		}
		if len(rep.Sums) != n {
			return nil, fmt.Errorf("search sync: %s sent %d sums for %d ranges", c.Addr, len(rep.Sums), n)
		}
		out = append(out, rep.Sums...)
		rs = rs[n:]
	}
	return out, nil
}

// pullParts lists parts (of r) at c page by page and stores the postings
// this node lacks or holds with another end. Each posting is checked
// (decodeAdd's Check, its URL key, its term key in one of parts); one
// that fails ends the sync with c and is counted as refused, as is a
// page past this node's MaxPostings. Postings of purged captures are
// left out.
func (sv *Service) pullParts(ctx context.Context, c ring.Contact, r KeyRange, parts []KeyRange, budget *int) error {
	known := map[id.ID]bool{}
	ours, err := sv.rangeSums(ctx, parts)
	if err != nil {
		return err
	}
	total := int64(0)
	for _, s := range ours {
		total += s.Count
	}
	if total <= maxKnownSet {
		if err := sv.scan(ctx, parts, func(_ int, p fts.Posting) { known[itemHash(p)] = true }); err != nil {
			return fmt.Errorf("search sync: %w", err)
		}
	}
	var purged func(url string, from int64) bool
	if sv.PurgeFilter != nil {
		purged = sv.PurgeFilter()
	}
	var after *SyncCursor
	for *budget > 0 {
		req := syncRequest{Op: opList, Ranges: parts, After: after, Limit: min(maxListPostings, *budget)}
		rep, ps, err := sv.syncCall(ctx, c, req)
		if err != nil {
			return err
		}
		var fresh []fts.Posting
		for _, p := range ps {
			k := fts.TermKey(p.Term)
			cur := cursorOf(p)
			switch {
			case p.Key != id.OfString(p.URL):
				err = fmt.Errorf("%w: key of %s", fts.ErrBadPosting, p.URL)
			case !r.Has(k) || !inAny(parts, k):
				err = fmt.Errorf("%w: term %q outside the range asked", ErrSyncRole, p.Term)
			case after != nil && cur.cmp(*after) <= 0:
				err = fmt.Errorf("%w: posting before the cursor", ErrSyncRole)
			}
			if err != nil {
				sv.refusedIn.Add(int64(len(ps)))
				return fmt.Errorf("search sync from %s: %w", c.Addr, err)
			}
			if !known[itemHash(p)] && (purged == nil || !purged(p.URL, p.From)) {
				fresh = append(fresh, p)
			}
		}
		if len(fresh) > 0 {
			if err := sv.roomFor(len(fresh)); err != nil {
				sv.refusedIn.Add(int64(len(fresh)))
				return fmt.Errorf("search sync from %s: %w", c.Addr, err)
			}
			if err := sv.Store.Put(ctx, fresh); err != nil {
				return fmt.Errorf("search sync: %w", err)
			}
			sv.synced.Add(int64(len(fresh)))
		}
		*budget -= len(ps)
		if rep.Next == nil || len(ps) == 0 {
			return nil
		}
		if last := cursorOf(ps[len(ps)-1]); rep.Next.cmp(last) < 0 {
			return fmt.Errorf("search sync from %s: %w: cursor behind its page", c.Addr, ErrSyncRole)
		}
		after = rep.Next
	}
	return nil
}

func inAny(rs []KeyRange, k id.ID) bool {
	for _, r := range rs {
		if r.Has(k) {
			return true
		}
	}
	return false
}

func (sv *Service) jobQueue() chan pullJob {
	sv.jobsOnce.Do(func() {
		sv.jobs = make(chan pullJob, pullQueue)
		sv.pending = map[pullJob]bool{}
	})
	return sv.jobs
}

// queuePull queues a checked pull request unless the same one waits or
// the queue is full (the owner's next round asks again).
func (sv *Service) queuePull(j pullJob) {
	q := sv.jobQueue()
	sv.jobMu.Lock()
	defer sv.jobMu.Unlock()
	if sv.pending[j] {
		return
	}
	select {
	case q <- j:
		sv.pending[j] = true
		sv.pulls.Add(1)
	default:
	}
}

// RunSync runs SyncRound every SyncInterval, and SyncSettle after the
// last of a burst of ring changes (events: a local virtual server's range
// or successors changed), until ctx ends; and serves queued pull
// requests. A due round waits:
//   - while postings are being stored (the last less than SyncQuiet ago),
//     at most SyncMaxDefer after it was due: a ring that crawls has its
//     holders differ by the batches in flight, which their pushes deliver;
//   - at least syncDuty times the last round's length after it (a round
//     scans the store: on a large one, sync so takes at most about a
//     twentieth of the time; restAfter).
//
// A round that finds every pair in sync doubles the period, up to
// maxBackoff times SyncInterval; a ring change, or a round that pulled,
// asked for a pull or failed, sets it back to SyncInterval.
func (sv *Service) RunSync(ctx context.Context, events <-chan ring.Event) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { sv.servePulls(ctx) })
	interval := sv.SyncInterval
	if interval <= 0 {
		interval = DefaultSyncInterval
	}
	period := interval
	maxDefer := cmp.Or(sv.maxDefer, SyncMaxDefer)
	next := time.Now().Add(period) // the next round is due
	var rested time.Time           // no round before: syncDuty times the last one's length after it
	for {
		at := next
		if at.Before(rested) {
			at = rested
		}
		if due := time.Now(); !at.After(due) {
			// Due: put off while postings are being stored.
			if wait := sv.quietWait(); wait > 0 && due.Sub(next) < maxDefer {
				at = due.Add(min(wait, cmp.Or(sv.quiet, SyncQuiet), maxDefer-due.Sub(next)))
			}
		}
		t := time.NewTimer(time.Until(at))
		fire := false
		select {
		case <-ctx.Done():
		case _, ok := <-events:
			if !ok {
				events = nil
				break
			}
			period = interval
			if soon := time.Now().Add(SyncSettle); soon.Before(next) {
				next = soon
			}
		case <-t.C:
			fire = time.Since(next) >= maxDefer || sv.quietWait() <= 0
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
		if !fire {
			continue
		}
		start := time.Now()
		settled, scanned, err := sv.syncRound(ctx)
		if err != nil && ctx.Err() == nil {
			sv.log().Debug("search sync round", "err", err)
		}
		if settled {
			period = min(2*period, maxBackoff*interval)
		} else {
			period = interval
		}
		sv.rounds.Add(1)
		next = time.Now().Add(period)
		rested = time.Now().Add(restAfter(time.Since(start), scanned))
	}
}

// restAfter returns how long after a round of wall time wall, of which
// scanned went to scanning this store for its digests, the next may
// start: syncDuty times the round's length, at most maxRest for the
// part a slow peer can stretch and at most maxScanRest for the scans,
// so that on a large store (a scan a posting held, every round) sync
// takes about a twentieth of the time however long its scans grow.
func restAfter(wall, scanned time.Duration) time.Duration {
	return max(min(syncDuty*wall, maxRest), min(syncDuty*scanned, maxScanRest))
}

// quietWait returns how long until SyncQuiet will have passed since
// postings were last stored (0 or less: it has).
func (sv *Service) quietWait() time.Duration {
	last := sv.lastPut.Load()
	if last == 0 {
		return 0
	}
	return cmp.Or(sv.quiet, SyncQuiet) - time.Since(time.Unix(0, last))
}

// notePut records that postings were stored now (RunSync's quiet).
func (sv *Service) notePut() { sv.lastPut.Store(time.Now().UnixNano()) }

// servePulls serves queued pull requests one at a time until ctx ends.
func (sv *Service) servePulls(ctx context.Context) {
	q := sv.jobQueue()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-q:
			sv.jobMu.Lock()
			delete(sv.pending, j)
			sv.jobMu.Unlock()
			if _, err := sv.pullRange(ctx, j.c, j.r); err != nil && ctx.Err() == nil {
				sv.syncErrs.Add(1)
				sv.log().Debug("search sync pull", "from", j.c.Addr, "err", err)
			}
			sv.pulls.Add(-1)
		}
	}
}

// SyncStats counts a node's posting sync.
type SyncStats struct {
	Pulled  int64 `json:"pulled"`  // postings pulled from other holders and stored
	Refused int64 `json:"refused"` // postings other holders sent that were refused
	Bytes   int64 `json:"bytes"`   // bytes of the syncs this node asked for, both ways
	InSync  int64 `json:"inSync"`  // range pairs found equal
	Errors  int64 `json:"errors"`  // range pairs whose sync failed
	Served  int64 `json:"served"`  // sync requests answered
	Pending int64 `json:"pending"` // pull requests of owners queued or being served
	Rounds  int64 `json:"rounds"`  // rounds run by RunSync
	Scans   int64 `json:"scans"`   // scans of the store for digests (none while it wrote nothing since the same ranges' last)
}

// SyncStats returns the sync counters.
func (sv *Service) SyncStats() SyncStats {
	return SyncStats{Pulled: sv.synced.Load(), Refused: sv.refusedIn.Load(), Bytes: sv.syncBytes.Load(),
		InSync: sv.inSync.Load(), Errors: sv.syncErrs.Load(), Served: sv.syncServed.Load(), Pending: sv.pulls.Load(),
		Rounds: sv.rounds.Load(), Scans: sv.scans.Load()}
}
