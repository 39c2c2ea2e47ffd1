package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// The push path: rounds compare ranges every Interval, so a version stored
// just after one would exist once until the next. An owner therefore
// offers each version it stores to the range's k-1 replicas as soon as it
// is durable (Notify, fed by archive.Store.OnAdd): records wait at most
// PushDelay, or until MaxBatch of them are waiting, and then go out as
// OpOffer requests of up to MaxBatch records, one stream of offers per
// replica, the replicas in parallel. A replica verifies an offer exactly
// as it verifies a pull request (verifyOwner), reads the records from the
// owner (OpReadBatch) and imports them (replicate.Copy, the records' path
// in Sync: Import checks each), then answers; the answer is the moment
// the copy exists, and the owner records the time since the store in
// the lag histogram (LagHistogram).
//
// Bound: a record waits at most PushDelay, then for a free one of
// pushSlots pushes (each offer is bounded by the stream timeout); under
// load the lag is PushDelay plus the time to copy what was stored
// meanwhile. What
// the push misses — a replica down or busy, a full queue, versions stored
// by a node that does not own them — the next round repairs.
//
// The known set travels the same way: the URLs this node's crawler learns
// (NotifyKnown, fed by crawl.Crawler.OnKnown) are handed to
// Config.ShareKnown within PushDelay, which sends each to its range's
// holders, to be remembered there; so a URL learned just before its owner
// dies is still crawled by the next owner.

// Push defaults.
const (
	// PushDelay bounds how long a stored record or a learned URL waits
	// before it is pushed (sooner once MaxBatch records wait).
	PushDelay = 250 * time.Millisecond
	// pushQueueLen bounds the records, and separately the URLs, waiting
	// for a push; beyond it they are dropped (counted), and rounds (for
	// records) or the crawler's daily share (for URLs) carry them.
	pushQueueLen = 1 << 14
	// pushSlots bounds the pushes under way at once.
	pushSlots = 4
)

// PushStats counts the push path since New.
type PushStats struct {
	// Queued counts records Notify queued; Dropped those a full queue
	// refused; Foreign those stored outside this node's own ranges, left
	// to rounds.
	Queued  int64 `json:"queued"`
	Dropped int64 `json:"dropped"`
	Foreign int64 `json:"foreign"`
	// Offers counts offers sent; Copies the (record, replica) pairs they
	// confirmed; Failed the pairs of offers that failed (left to rounds).
	Offers int64 `json:"offers"`
	Copies int64 `json:"copies"`
	Failed int64 `json:"failed"`
	// Sent is the traffic of the offers this node sent (requests and
	// acknowledgements); the records themselves travel in the replicas'
	// reads, counted in Received.Traffic on their side.
	Sent replicate.Traffic `json:"sent"`
	// Served counts offers accepted from owners, Received what copying
	// them did (Pulled, Present, Rejected, and the reads' traffic).
	Served   int64           `json:"served"`
	Received replicate.Stats `json:"received"`
	// Known counts URLs NotifyKnown queued; KnownShared those handed to
	// ShareKnown; KnownFailed those whose share failed; KnownDropped
	// those a full queue refused.
	Known        int64 `json:"known"`
	KnownShared  int64 `json:"known_shared"`
	KnownFailed  int64 `json:"known_failed"`
	KnownDropped int64 `json:"known_dropped"`
}

// pushed is a record waiting for its push, with the time it was stored.
type pushed struct {
	e  archive.Entry
	at time.Time
}

// pushQueue holds what waits for the next push. Guarded by Replicator.mu.
type pushQueue struct {
	recs  []pushed
	urls  []string
	since time.Time // when the oldest waiting item was queued
	busy  int       // pushes under way
}

func (q *pushQueue) empty() bool { return len(q.recs) == 0 && len(q.urls) == 0 }

// newLagHistogram returns the histogram of push lags.
func newLagHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herod_replication_push_lag_seconds",
		Help: "Time from a version's store by its owner to a replica's confirmed import of it (push path), per replica.",
		// 10 ms to 14.8 s, each bucket 1.5 times the last.
		Buckets: prometheus.ExponentialBuckets(0.01, 1.5, 19),
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
	if len(r.pq.recs) >= pushQueueLen {
		r.st.Push.Dropped++
		return
	}
	now := time.Now()
	if r.pq.empty() {
		r.pq.since = now
	}
	r.pq.recs = append(r.pq.recs, pushed{e: v.Entry(), at: now})
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
	if r.pq.empty() {
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
	return r.pq.empty() && r.pq.busy == 0
}

// Push sends what Notify and NotifyKnown queue, until ctx ends: a batch
// leaves PushDelay after its oldest item was queued, or at once when
// MaxBatch records wait; up to pushSlots pushes run at once (while all
// are busy, what arrives waits and goes out in one batch). Push returns
// once the pushes it started have ended.
func (r *Replicator) Push(ctx context.Context) {
	slots := make(chan struct{}, pushSlots)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		r.mu.Lock()
		ready, wait := false, time.Duration(-1) // -1: nothing waits
		if !r.pq.empty() {
			wait = PushDelay - time.Since(r.pq.since)
			ready = wait <= 0 || len(r.pq.recs) >= replicate.MaxBatch
		}
		r.mu.Unlock()
		if ready {
			select { // a free slot, or wait for one while more arrives
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			r.mu.Lock()
			recs, urls := r.pq.recs, r.pq.urls
			r.pq.recs, r.pq.urls = nil, nil
			r.pq.busy++
			r.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.push(ctx, recs, urls)
				r.mu.Lock()
				r.pq.busy--
				r.mu.Unlock()
				<-slots
			}()
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

// push offers recs to their ranges' replicas and shares urls.
func (r *Replicator) push(ctx context.Context, recs []pushed, urls []string) {
	var wg sync.WaitGroup
	if len(urls) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.cfg.ShareKnown(ctx, urls)
			r.mu.Lock()
			if err != nil {
				r.st.Push.KnownFailed += int64(len(urls))
			} else {
				r.st.Push.KnownShared += int64(len(urls))
			}
			r.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				r.fail(fmt.Errorf("push known urls: %w", err))
			}
		}()
	}
	if len(recs) > 0 {
		r.offerAll(ctx, recs)
	}
	wg.Wait()
}

// offer is the records of one local range bound for one replica.
type offer struct {
	v    ring.VnodeStatus
	recs []pushed
}

// offerAll groups recs by the local range that holds them and sends each
// replica its offers, the replicas in parallel.
func (r *Replicator) offerAll(ctx context.Context, recs []pushed) {
	vs := r.cfg.Ring.Status().Vnodes
	byRange := map[int][]pushed{} // by index in vs
	foreign := 0
	for _, p := range recs {
		i := -1
		for j, v := range vs {
			if v.Range.Contains(p.e.Key) {
				i = j
				break
			}
		}
		if i < 0 {
			foreign++
			continue
		}
		byRange[i] = append(byRange[i], p)
	}
	perReplica := map[ring.Contact][]offer{}
	for i, ps := range byRange {
		for _, c := range r.replicasOf(ctx, vs[i]) {
			perReplica[c] = append(perReplica[c], offer{v: vs[i], recs: ps})
		}
	}
	r.mu.Lock()
	r.st.Push.Foreign += int64(foreign)
	r.mu.Unlock()
	var wg sync.WaitGroup
	for c, offers := range perReplica {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.offerTo(ctx, c, offers)
		}()
	}
	wg.Wait()
}

// offerTo sends replica c its offers, MaxBatch records each, one after
// another, and records the lag of every record c confirmed.
func (r *Replicator) offerTo(ctx context.Context, c ring.Contact, offers []offer) {
	cl := r.client(c)
	var errs []error
	for _, o := range offers {
		from := replicate.Contact{Peer: r.cfg.Self.Peer, Addr: r.cfg.Self.Addr, Index: o.v.Index}
		for recs := o.recs; len(recs) > 0; {
			n := min(len(recs), replicate.MaxBatch)
			es := make([]archive.Entry, n)
			for i := range es {
				es[i] = recs[i].e
			}
			err := cl.Offer(ctx, o.v.Range.Start, o.v.Range.End, from, es)
			now := time.Now()
			r.mu.Lock()
			r.st.Push.Offers++
			if err != nil {
				r.st.Push.Failed += int64(n)
			} else {
				r.st.Push.Copies += int64(n)
			}
			r.mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				for _, p := range recs[:n] {
					r.lag.Observe(now.Sub(p.at).Seconds())
				}
			}
			recs = recs[n:]
		}
	}
	r.mu.Lock()
	t := cl.Traffic()
	r.st.Push.Sent.Requests += t.Requests
	r.st.Push.Sent.Sent += t.Sent
	r.st.Push.Sent.Received += t.Received
	r.mu.Unlock()
	if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
		r.fail(fmt.Errorf("push to %s: %w", c.Addr, err))
	}
}

// acceptOffer serves an offer from member m: verified as a pull request
// is (verifyOwner), then the records are copied from the owner and
// imported (replicate.Copy) before the reply, which is an error unless
// every record is now held. Offers are served as they come: each owner
// sends a replica one at a time.
func (r *Replicator) acceptOffer(ctx context.Context, m ring.Node, q replicate.Request) error {
	from, err := r.verifyOwner(ctx, m, q)
	if err != nil {
		return err
	}
	st, err := replicate.Copy(ctx, r.cfg.Local, r.client(from.Contact), q.A, q.B, q.Entries, replicate.Options{})
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
