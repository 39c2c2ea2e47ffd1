package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// The push path: rounds compare ranges every Interval, so a version stored
// just after one would exist once until the next. An owner therefore
// offers each version it stores to the range's k-1 replicas as soon as it
// is durable (Notify, fed by archive.Store.OnAdd): records wait at most
// PushDelay, or until MaxBatch of them are waiting, and then go out as
// OpOffer requests of up to MaxBatch records, one offer at a time per
// replica, the replicas in parallel. A replica verifies an offer exactly
// as it verifies a pull request (verifyOwner), reads the records from the
// owner (OpReadBatch) and imports them (replicate.Copy, the records' path
// in Sync: Import checks each), then answers; the answer is the moment
// the copy exists, and the owner records the time since the store in
// the lag histogram (LagHistogram).
//
// Bound: a record waits at most PushDelay, then for the offers ahead of
// it in its replica's queue (each bounded by the stream timeout); under
// load the lag is PushDelay plus the time the replica takes to copy what
// was stored meanwhile, and a slow replica delays only its own copies. What
// the push misses — a replica down or busy, a full queue, versions stored
// by a node that does not own them — the next round repairs.
//
// The known set travels the same way: the URLs this node's crawler learns
// (NotifyKnown, fed by crawl.Crawler.OnKnown) are handed to
// Config.ShareKnown within PushDelay, which sends each to its range's
// holders, to be remembered there; so a URL learned just before its owner
// dies is still crawled by the next owner. URLs whose share fails (all of
// them, or those a ShareKnown error names through FailedURLs) are shared
// again after knownBackoff, up to knownTries times in all: about three
// minutes, which outlasts views of the ring that differ while it forms or
// while it replaces a node that died.

// Push defaults.
const (
	// PushDelay bounds how long a stored record or a learned URL waits
	// before it is pushed (sooner once MaxBatch records wait).
	PushDelay = 250 * time.Millisecond
	// pushQueueLen bounds the records, and separately the URLs, waiting
	// for a push (and the URLs waiting to be shared again); beyond it
	// they are dropped (counted), and rounds (for records) or the
	// crawler's daily share (for URLs) carry them.
	pushQueueLen = 1 << 14
	// knownTries bounds the shares of one URL by the push path.
	knownTries = 8
	// knownBackoffMax bounds the wait before a URL is shared again.
	knownBackoffMax = time.Minute
)

// knownBackoff is the wait before the share after tries failed ones:
// PushDelay, four times as long after each further failure, at most
// knownBackoffMax (0.25, 1, 4, 16 s, then a minute: the eighth share
// comes about three and a half minutes after the first).
func knownBackoff(tries int) time.Duration {
	d := PushDelay
	for range tries - 1 {
		if d *= 4; d >= knownBackoffMax {
			return knownBackoffMax
		}
	}
	return d
}

// PushStats counts the push path since New.
type PushStats struct {
	// Queued counts records Notify queued; Dropped those a full queue
	// refused; Foreign those stored outside this node's own ranges,
	// handed to their owners (Stats.HandOff).
	Queued  int64 `json:"queued"`
	Dropped int64 `json:"dropped"`
	Foreign int64 `json:"foreign"`
	// Offers counts offers sent; Copies the (record, replica) pairs they
	// confirmed; Retried the records of failed offers queued once more;
	// Failed the pairs of offers that failed again (left to rounds).
	Offers int64 `json:"offers"`
	Copies int64 `json:"copies"`
	// Short counts records dispatched to fewer than k-1 replicas (the
	// range's successor list named fewer other real nodes: a small
	// ring, or one whose lists are still filling).
	Short   int64 `json:"short"`
	Retried int64 `json:"retried"`
	Failed  int64 `json:"failed"`
	// Repairs counts the pull requests sent for ranges whose records a
	// full queue dropped (the replica syncs the range at once);
	// RepairsFailed those that failed (left to rounds).
	Repairs       int64 `json:"repairs"`
	RepairsFailed int64 `json:"repairs_failed"`
	// Sent is the traffic of the offers this node sent (requests, with
	// the records they carry, and acknowledgements); the records an
	// offer left out travel in the replicas' reads, counted in
	// Received.Traffic on their side.
	Sent replicate.Traffic `json:"sent"`
	// Served counts offers accepted from owners, Received what copying
	// them did (Pulled, Present, Rejected, and the reads' traffic).
	Served   int64           `json:"served"`
	Received replicate.Stats `json:"received"`
	// Known counts URLs NotifyKnown queued; KnownShared those
	// ShareKnown delivered; KnownRetried those whose share failed and
	// were queued again (once per failure); KnownFailed those whose
	// share failed knownTries times or found the retry queue full (the
	// crawler's daily share carries them); KnownDropped those a full
	// queue refused.
	Known        int64 `json:"known"`
	KnownShared  int64 `json:"known_shared"`
	KnownRetried int64 `json:"known_retried"`
	KnownFailed  int64 `json:"known_failed"`
	KnownDropped int64 `json:"known_dropped"`
	// Waits counts WaitCopies calls that saw their copies made;
	// WaitsShort those that returned ErrFewerCopies; WaitsLate those
	// whose context ended first (acks.go).
	Waits      int64 `json:"waits,omitempty"`
	WaitsShort int64 `json:"waits_short,omitempty"`
	WaitsLate  int64 `json:"waits_late,omitempty"`
}

// pushed is a record waiting for its push, with the time it was stored
// and the offers of it that failed (one is tried again).
type pushed struct {
	e     archive.Entry
	at    time.Time
	tries int
	t     *copyTracker // with Config.TrackCopies: its copies, for WaitCopies
}

// pushQueue holds what waits for the next push. Guarded by Replicator.mu.
type pushQueue struct {
	recs        []pushed
	urls        []string
	again       []knownRetry // URLs whose share failed, by when they are due
	since       time.Time    // when the oldest waiting item was queued
	sharing     bool         // a share is under way
	dispatching bool         // Push is handing records to replica queues
	overflow    bool         // Notify dropped a record: every own range is dirty
}

// knownRetry is a batch of URLs whose share failed tries times, to be
// shared again at due.
type knownRetry struct {
	urls  []string
	tries int
	due   time.Time
}

// empty reports whether nothing waits for the push, retries included.
func (q *pushQueue) empty() bool { return q.fresh() && len(q.again) == 0 }

// fresh reports whether no record or new URL waits: what comes next
// starts the PushDelay wait (since). Retries wait for their own due.
func (q *pushQueue) fresh() bool { return len(q.recs) == 0 && len(q.urls) == 0 }

// nextDue returns when the first retry is due; ok false when none waits.
func (q *pushQueue) nextDue() (t time.Time, ok bool) {
	for _, k := range q.again {
		if !ok || k.due.Before(t) {
			t, ok = k.due, true
		}
	}
	return t, ok
}

// retrying returns how many URLs wait to be shared again.
func (q *pushQueue) retrying() int {
	n := 0
	for _, k := range q.again {
		n += len(k.urls)
	}
	return n
}

// takeDue removes and returns the retries due at now.
func (q *pushQueue) takeDue(now time.Time) []knownRetry {
	var due []knownRetry
	kept := q.again[:0]
	for _, k := range q.again {
		if k.due.After(now) {
			kept = append(kept, k)
			continue
		}
		due = append(due, k)
	}
	clear(q.again[len(kept):])
	q.again = kept
	return due
}

// newLagHistogram returns the histogram of push lags.
func newLagHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herod_replication_push_lag_seconds",
		Help: "Time from a version's store by its owner to a replica's confirmed import of it (push path), per replica.",
		// 10 ms to 60 s, each bucket 1.5 times the last.
		Buckets: prometheus.ExponentialBuckets(0.01, 1.5, 23),
	})
}

// LagHistogram returns the histogram of push lags, for the node's
// metrics registry: herod_replication_push_lag_seconds, one observation
// per (record, replica) pair an offer confirmed.
func (r *Replicator) LagHistogram() prometheus.Histogram { return r.lag }

// Notify queues the version v, just stored by this node, for a push to
// its range's replicas. It never blocks; it is archive.Store.OnAdd's
// function.
func (r *Replicator) Notify(v archive.Version) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.trackLocked(v.Entry())
	if len(r.pq.recs) >= r.queueLen {
		r.st.Push.Dropped++
		r.ho.sweep = true    // it may lie outside this node's ranges
		r.pq.overflow = true // its range is repaired once the queues drain
		lostLocked(t)
		return
	}
	now := time.Now()
	if r.pq.fresh() {
		r.pq.since = now
	}
	r.pq.recs = append(r.pq.recs, pushed{e: v.Entry(), at: now, t: t})
	r.st.Push.Queued++
	if len(r.pq.recs) == 1 || len(r.pq.recs) == replicate.MaxBatch {
		r.wakePush()
	}
}

// NotifyKnown queues URLs this node just learned for Config.ShareKnown.
// It never blocks; it is crawl.Crawler.OnKnown's function.
func (r *Replicator) NotifyKnown(urls []string) {
	if r.cfg.ShareKnown == nil || len(urls) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(urls), pushQueueLen-len(r.pq.urls))
	r.st.Push.KnownDropped += int64(len(urls) - n)
	if n <= 0 {
		return
	}
	if r.pq.fresh() {
		r.pq.since = time.Now()
	}
	r.pq.urls = append(r.pq.urls, urls[:n]...)
	r.st.Push.Known += int64(n)
	r.wakePush()
}

// wakePush wakes Push. The caller holds r.mu.
func (r *Replicator) wakePush() {
	select {
	case r.pushWake <- struct{}{}:
	default:
	}
}

// PushIdle reports whether nothing waits for a push and none is under way.
func (r *Replicator) PushIdle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pq.empty() && !r.pq.sharing && !r.pq.dispatching && len(r.rq) == 0 && r.ho.running == 0
}

// Push sends what Notify and NotifyKnown queue, until ctx ends: a batch
// leaves PushDelay after its oldest item was queued, or at once when
// MaxBatch records wait. Its records go to the queues of their ranges'
// replicas, each drained by its own sender (send), so that a slow
// replica delays only its own copies; its URLs go to ShareKnown, one
// share at a time. Push returns once the senders and shares it started
// have ended.
func (r *Replicator) Push(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		r.mu.Lock()
		now := time.Now()
		ready, wait := false, time.Duration(-1) // -1: nothing to send
		if len(r.pq.recs) > 0 || !r.pq.sharing && len(r.pq.urls) > 0 {
			wait = PushDelay - now.Sub(r.pq.since)
			ready = wait <= 0 || len(r.pq.recs) >= replicate.MaxBatch
		}
		if due, ok := r.pq.nextDue(); ok && !r.pq.sharing {
			if w := due.Sub(now); w <= 0 {
				ready = true
			} else if wait < 0 || w < wait {
				wait = w
			}
		}
		var recs []pushed
		var urls []string
		var again []knownRetry
		overflow, hasURLs := false, false
		if ready {
			recs, r.pq.recs = r.pq.recs, nil
			overflow, r.pq.overflow = r.pq.overflow, false
			if !r.pq.sharing {
				urls, r.pq.urls = r.pq.urls, nil
				again = r.pq.takeDue(now)
				hasURLs = len(urls) > 0 || len(again) > 0
				r.pq.sharing = hasURLs
			}
			r.pq.since = now // for what is left or comes next
			r.pq.dispatching = len(recs) > 0 || overflow
		}
		r.mu.Unlock()
		if ready {
			if hasURLs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.shareAll(ctx, urls, again)
				}()
			}
			if len(recs) > 0 || overflow {
				r.dispatch(ctx, recs, overflow, &wg)
			}
			continue
		}
		var timer *time.Timer
		var tick <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			tick = timer.C
		}
		select {
		case <-ctx.Done():
		case <-r.pushWake:
		case <-tick:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// shareAll shares urls (new) and the retries due in one ShareKnown call,
// so that a holder that fails costs one timeout whatever the number of
// batches, then lets Push start the next share. The URLs whose share
// failed (all of them, or those the error names through FailedURLs) wait
// knownBackoff of their tries and are shared again, unless they have had
// knownTries shares; the retry queue holds at most pushQueueLen URLs.
func (r *Replicator) shareAll(ctx context.Context, urls []string, again []knownRetry) {
	all := urls
	var triesOf map[string]int // a URL's failed shares, when retries are in the call
	if len(again) > 0 {
		triesOf = make(map[string]int, len(urls)+len(again))
		all = slices.Clone(urls)
		for _, b := range again {
			for _, u := range b.urls {
				if _, dup := triesOf[u]; !dup {
					all = append(all, u)
				}
				triesOf[u] = max(triesOf[u], b.tries)
			}
		}
	}
	err := r.cfg.ShareKnown(ctx, all)
	failed := all
	var named interface{ FailedURLs() []string }
	if err != nil && errors.As(err, &named) && len(named.FailedURLs()) <= len(all) {
		failed = named.FailedURLs()
	} else if err == nil {
		failed = nil
	}
	r.mu.Lock()
	r.st.Push.KnownShared += int64(len(all) - len(failed))
	var byTries [knownTries + 1][]string // failed URLs by their shares so far, this one included
	for _, u := range failed {
		byTries[triesOf[u]+1] = append(byTries[triesOf[u]+1], u)
	}
	for tries, us := range byTries {
		if len(us) == 0 {
			continue
		}
		n := 0
		if tries < knownTries && ctx.Err() == nil {
			n = max(0, min(len(us), pushQueueLen-r.pq.retrying()))
		}
		if n > 0 {
			r.pq.again = append(r.pq.again, knownRetry{urls: us[:n:n], tries: tries, due: time.Now().Add(r.knownBackoff(tries))})
			r.st.Push.KnownRetried += int64(n)
		}
		r.st.Push.KnownFailed += int64(len(us) - n)
	}
	r.pq.sharing = false
	r.wakePush()
	r.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		r.fail(fmt.Errorf("push known urls: %w", err))
	}
}

// requeueLocked starts the wait of what is queued again: PushDelay from
// now if nothing else waits. The caller holds r.mu.
func (r *Replicator) requeueLocked() {
	if r.pq.fresh() {
		r.pq.since = time.Now()
	}
	r.wakePush()
}

// pushRange is a local virtual server's range, as an offer names it.
type pushRange struct {
	a, b  id.ID
	index int
}

// offered is a record bound for one replica, with the range it is in.
type offered struct {
	p pushed
	g pushRange
}

// replicaQueue is what waits to be offered to one replica. Guarded by
// Replicator.mu.
type replicaQueue struct {
	items []offered
	// dirty holds the ranges of records a full queue dropped: once the
	// queue is empty, the sender asks the replica to pull each (OpPull:
	// the replica compares the range's sums and copies only what it
	// lacks), instead of leaving them to the next round.
	dirty map[pushRange]bool
}

// dispatch adds recs to the queues of their ranges' replicas and starts a
// sender for each queue that has none. Records outside this node's own
// ranges (Foreign) are handed to their owners (handoff.go). A record a
// full queue drops makes its range dirty for that replica; with overflow
// set (Notify dropped records), every own range is dirty for each of its
// replicas.
func (r *Replicator) dispatch(ctx context.Context, recs []pushed, overflow bool, wg *sync.WaitGroup) {
	vs := r.cfg.Ring.Status().Vnodes
	reps := map[int][]ring.Contact{} // by index in vs, looked up once
	add := map[ring.Contact][]offered{}
	dirty := map[ring.Contact][]pushRange{}
	if overflow {
		for i, v := range vs {
			if !v.Range.Known {
				continue
			}
			reps[i] = r.replicasOf(ctx, v)
			for _, c := range reps[i] {
				dirty[c] = append(dirty[c], pushRange{a: v.Range.Start, b: v.Range.End, index: v.Index})
			}
		}
	}
	var foreign []archive.Entry
	var short int64
	var lost []*copyTracker
	routed := map[*copyTracker][]ring.Contact{}
	for _, p := range recs {
		i := slices.IndexFunc(vs, func(v ring.VnodeStatus) bool { return v.Range.Contains(p.e.Key) })
		if i < 0 {
			foreign = append(foreign, p.e)
			lost = append(lost, p.t)
			continue
		}
		cs, ok := reps[i]
		if !ok {
			cs = r.replicasOf(ctx, vs[i])
			reps[i] = cs
		}
		if len(cs) < r.k()-1 {
			short++
		}
		g := pushRange{a: vs[i].Range.Start, b: vs[i].Range.End, index: vs[i].Index}
		for _, c := range cs {
			add[c] = append(add[c], offered{p: p, g: g})
		}
		if p.t != nil {
			routed[p.t] = cs
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pq.dispatching = false
	r.st.Push.Foreign += int64(len(foreign))
	if short > 0 && !r.shortPendingLocked() {
		// Run holds a round once the lists name k-1 replicas; it is woken
		// only when none was pending (a kick puts off its periodic round).
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	r.st.Push.Short += short
	if len(foreign) > 0 {
		r.ho.running++
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.handOffPushed(ctx, foreign)
		}()
	}
	for _, t := range lost {
		lostLocked(t)
	}
	for t, cs := range routed {
		routedLocked(t, cs)
	}
	for c := range dirty {
		if _, ok := add[c]; !ok {
			add[c] = nil
		}
	}
	for c, items := range add {
		q, running := r.rq[c]
		if !running {
			q = &replicaQueue{}
			r.rq[c] = q
		}
		n := max(0, min(len(items), r.queueLen-len(q.items)))
		r.st.Push.Dropped += int64(len(items) - n)
		for _, it := range items[n:] {
			ackedLocked(it.p.t, c, false)
			q.markDirty(it.g)
		}
		for _, g := range dirty[c] {
			q.markDirty(g)
		}
		q.items = append(q.items, items[:n]...)
		if !running {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.send(ctx, c)
			}()
		}
	}
}

// markDirty adds g to the ranges to repair once the queue is empty.
func (q *replicaQueue) markDirty(g pushRange) {
	if q.dirty == nil {
		q.dirty = map[pushRange]bool{}
	}
	q.dirty[g] = true
}

// send offers replica c what its queue holds, MaxBatch records of one
// range an offer, one offer at a time, until the queue is empty; it
// records the lag of every record c confirmed. A record of a failed offer
// is queued once more (to every replica: those that hold it answer at
// once), then left to rounds. Once the queue is empty, each dirty range
// (records a full queue dropped) is repaired by a pull request: the
// replica syncs the range from this node, reading only what it lacks.
func (r *Replicator) send(ctx context.Context, c ring.Contact) {
	cl := r.client(c)
	var errs []error
	defer func() {
		t := cl.Traffic()
		r.mu.Lock()
		r.st.Push.Sent.Requests += t.Requests
		r.st.Push.Sent.Sent += t.Sent
		r.st.Push.Sent.Received += t.Received
		r.mu.Unlock()
		if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
			r.fail(fmt.Errorf("push to %s: %w", c.Addr, err))
		}
	}()
	for {
		r.mu.Lock()
		q := r.rq[c]
		if len(q.items) == 0 && len(q.dirty) > 0 && ctx.Err() == nil {
			dirty := q.dirty
			q.dirty = nil
			r.mu.Unlock()
			errs = append(errs, r.repair(ctx, cl, dirty)...)
			continue
		}
		if len(q.items) == 0 || ctx.Err() != nil {
			delete(r.rq, c)
			r.wakePush() // PushIdle may hold now
			r.mu.Unlock()
			return
		}
		g := q.items[0].g
		var batch []pushed
		rest := q.items[:0]
		for _, it := range q.items {
			if it.g == g && len(batch) < replicate.MaxBatch {
				batch = append(batch, it.p)
			} else {
				rest = append(rest, it)
			}
		}
		q.items = rest
		r.mu.Unlock()

		es := make([]archive.Entry, len(batch))
		for i, p := range batch {
			es[i] = p.e
		}
		from := replicate.Contact{Peer: r.cfg.Self.Peer, Addr: r.cfg.Self.Addr, Index: g.index}
		err := cl.OfferStored(ctx, g.a, g.b, from, es, replicate.Carry(ctx, es, r.cfg.Source.ReadStored))
		now := time.Now()
		r.mu.Lock()
		r.st.Push.Offers++
		if err == nil {
			r.st.Push.Copies += int64(len(batch))
			for _, p := range batch {
				ackedLocked(p.t, c, true)
			}
		} else {
			var again []pushed
			for _, p := range batch {
				if p.tries == 0 && ctx.Err() == nil && len(r.pq.recs)+len(again) < r.queueLen {
					p.tries++
					again = append(again, p)
				} else {
					ackedLocked(p.t, c, false)
				}
			}
			r.st.Push.Retried += int64(len(again))
			r.st.Push.Failed += int64(len(batch) - len(again))
			if len(again) < len(batch) {
				r.roundSoon()
			}
			if len(again) > 0 {
				r.requeueLocked()
				r.pq.recs = append(r.pq.recs, again...)
			}
		}
		r.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range batch {
			r.lag.Observe(now.Sub(p.at).Seconds())
		}
	}
}

// roundSoon has Run hold a round Settle after the last ring change
// instead of at the next interval: records of offers that failed twice
// are left to rounds.
func (r *Replicator) roundSoon() {
	r.pushLeft.Store(true)
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// repair asks the replica behind cl to pull each dirty range from this
// node (the pull request of a round, for these ranges only) and returns
// the errors; a range whose request failed is left to rounds (a round
// soon: roundSoon).
func (r *Replicator) repair(ctx context.Context, cl *replicate.Client, dirty map[pushRange]bool) []error {
	var errs []error
	for g := range dirty {
		from := replicate.Contact{Peer: r.cfg.Self.Peer, Addr: r.cfg.Self.Addr, Index: g.index}
		err := cl.Pull(ctx, g.a, g.b, from)
		r.mu.Lock()
		if err == nil {
			r.st.Push.Repairs++
		} else {
			r.st.Push.RepairsFailed++
			errs = append(errs, err)
		}
		r.mu.Unlock()
	}
	if len(errs) > 0 {
		r.roundSoon()
	}
	return errs
}

// acceptOffer serves an offer from member m: verified as a pull request
// is (verifyOwner), then the records are copied from the owner and
// imported (replicate.Copy) before the reply, which is an error unless
// every record is now held. Offers are served as they come: each owner
// sends a replica one at a time.
func (r *Replicator) acceptOffer(ctx context.Context, m ring.Node, q replicate.Request) error {
	if reason := r.paused(); reason != "" {
		return fmt.Errorf("offer refused: %s", reason)
	}
	from, err := r.verifyOwner(ctx, m, q)
	if err != nil {
		return err
	}
	peer := replicate.WithCarried(r.client(from.Contact), q) // what the offer carries needs no read
	st, err := replicate.Copy(ctx, r.cfg.Local, peer, q.A, q.B, q.Entries, r.syncOptions())
	r.mu.Lock()
	r.st.Push.Served++
	r.st.Push.Received.Add(st)
	r.mu.Unlock()
	if err == nil && st.Pulled+st.Present < int64(len(q.Entries)) {
		// The owner must not count these as copied: rounds repair them.
		err = fmt.Errorf("%d of %d records not copied (%d refused, %d unreadable)",
			int64(len(q.Entries))-st.Pulled-st.Present, len(q.Entries), st.Rejected, st.Failed)
	}
	if err != nil {
		return r.fail(fmt.Errorf("offer from %s: %w", from.Addr, err))
	}
	return nil
}
