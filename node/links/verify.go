package links

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/archive"
)

// A record arrives from the source's owner, through the target's
// holders: both are peers, and either can lie. The Verifier is where a
// record is checked before a reader sees it: it reads the source capture
// the record names, through the same archive the gateway replays from,
// and keeps the record only if that capture carries the link.

// Reader reads a capture of a URL as readers are shown it: the newest
// shown version not newer than t (or the oldest when all are newer) and
// its capture, verified from its holders with the access rules applied.
// The gateway's archive implements it.
type Reader interface {
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// Defaults of a Verifier's zero fields.
const (
	DefaultVerifyCache    = 4096
	DefaultVerifyParallel = 4
	DefaultVerifyTimeout  = 10 * time.Second
	DefaultVerifyTTL      = 10 * time.Minute
)

// Verifier checks link records against the captures they name. A record
// (Source, From, Target, Anchor) is shown when
//
//   - the capture of Source at From, as readers are shown it, exists
//     (exactly at From) and carries a link to Target (Carried: the
//     extractor that builds records);
//   - when a date at is asked and the record is live then, the capture
//     of Source live at at carries the link too, so a span stretched
//     past the link's end shows as not live;
//   - Anchor is the link's text in one of those captures, or, when the
//     text changed later (a record shows the newest text), in the capture
//     at Seen (or the last before Until, for an ended record).
//
// A record whose capture was read and does not carry it is Dropped; one
// whose capture could not be read (absent, not shown, an error, past the
// deadline) is Unchecked; neither is shown. What one capture says of one
// target is cached (Cache entries, TTL), so a list costs its reads once,
// and checks that need a fact being read wait for that read; checks run
// Parallel at once and end at Timeout.
//
// A Verifier is safe for concurrent use; its fields must not change once
// it is used.
type Verifier struct {
	// Cache bounds the cached facts (one per capture read and target
	// asked); zero means DefaultVerifyCache.
	Cache int
	// Parallel bounds the records checked at once by one Verify; zero
	// means DefaultVerifyParallel.
	Parallel int
	// Timeout bounds one Verify; zero means DefaultVerifyTimeout.
	Timeout time.Duration
	// TTL bounds how long a fact is reused: an access rule or a purge
	// that hides a source capture later hides its links from a
	// Verifier's lists within TTL. Zero means DefaultVerifyTTL.
	TTL time.Duration
	// Now is the clock of the cache; nil means time.Now.
	Now func() time.Time
	// Logger, if set, gets one debug line per dropped record.
	Logger *slog.Logger

	mu      sync.Mutex
	lru     *list.List // of *factEntry, most recent first
	items   map[factKey]*list.Element
	flights map[factKey]*flight // reads in progress

	shown, dropped, unchecked, reads, hits atomic.Int64
}

// VerifyStats are a Verifier's counters since it was made.
type VerifyStats struct {
	Shown     int64 `json:"shown"`     // records that passed
	Dropped   int64 `json:"dropped"`   // records their capture does not carry
	Unchecked int64 `json:"unchecked"` // records whose capture could not be read
	Reads     int64 `json:"reads"`     // captures read
	CacheHits int64 `json:"cacheHits"` // facts answered from the cache
}

// Stats returns the Verifier's counters.
func (vf *Verifier) Stats() VerifyStats {
	return VerifyStats{Shown: vf.shown.Load(), Dropped: vf.dropped.Load(), Unchecked: vf.unchecked.Load(),
		Reads: vf.reads.Load(), CacheHits: vf.hits.Load()}
}

// Checked is what Verify kept of a list of records.
type Checked struct {
	// Records are the records that passed, in the order given.
	Records []Record
	// Dropped counts records whose capture was read and does not carry
	// the link, or not with that text.
	Dropped int
	// Unchecked counts records whose capture could not be read in time.
	Unchecked int
}

// verdict is the outcome of checking one record.
type verdict int

const (
	unchecked verdict = iota
	shown
	dropped
)

// errNoCapture reports that the capture a record names is not one a
// reader is shown: the newest shown version at its time is another.
var errNoCapture = errors.New("links: no such capture shown")

// Verify checks recs, read through src, as of at (zero: any time), and
// returns those that pass, in order.
func (vf *Verifier) Verify(ctx context.Context, src Reader, recs []Record, at time.Time) Checked {
	timeout := vf.Timeout
	if timeout <= 0 {
		timeout = DefaultVerifyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	par := vf.Parallel
	if par <= 0 {
		par = DefaultVerifyParallel
	}
	out := make([]verdict, len(recs))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, r := range recs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break // the rest stay unchecked
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = vf.check(ctx, src, r, at)
		}()
	}
	wg.Wait()
	var res Checked
	res.Records = make([]Record, 0, len(recs))
	for i, v := range out {
		switch v {
		case shown:
			res.Records = append(res.Records, recs[i])
		case dropped:
			res.Dropped++
			if vf.Logger != nil {
				vf.Logger.Debug("links: record not carried by its capture", "source", recs[i].Source,
					"from", recs[i].From, "target", recs[i].Target)
			}
		default:
			res.Unchecked++
		}
	}
	vf.shown.Add(int64(len(res.Records)))
	vf.dropped.Add(int64(res.Dropped))
	vf.unchecked.Add(int64(res.Unchecked))
	return res
}

// check decides one record (see Verifier).
func (vf *Verifier) check(ctx context.Context, src Reader, r Record, at time.Time) verdict {
	f, err := vf.fact(ctx, src, r.Source, r.From, r.Target, r.From, r.From)
	if err != nil {
		return unchecked
	}
	if !f.carries {
		return dropped
	}
	textOK := f.anchor == r.Anchor
	if !at.IsZero() && at.After(r.From) && r.LiveAt(at) {
		f, err := vf.fact(ctx, src, r.Source, at, r.Target, r.From, at)
		if err != nil {
			return unchecked
		}
		if !f.carries {
			return dropped
		}
		textOK = textOK || f.anchor == r.Anchor
	}
	if textOK {
		return shown
	}
	// The text changed after From: the record shows the newest, which
	// the capture at Seen carries (or, once the link ended, the last
	// capture before Until).
	t, lo, hi := r.Seen, r.Seen, r.Seen
	if !r.Until.IsZero() && !r.Seen.Before(r.Until) {
		t, lo, hi = r.Until.Add(-time.Nanosecond), r.From, r.Until.Add(-time.Nanosecond)
	}
	if !t.After(r.From) {
		return dropped
	}
	f, err = vf.fact(ctx, src, r.Source, t, r.Target, lo, hi)
	if err != nil {
		return unchecked
	}
	if !f.carries || f.anchor != r.Anchor {
		return dropped
	}
	return shown
}

// factKey names what the capture of source read for time t says of
// target.
type factKey struct {
	source, target string
	t              int64
}

// fact is what one capture says of one target: the capture's time and
// whether it carries a link to the target, with which text.
type fact struct {
	at      time.Time
	carries bool
	anchor  string
}

type factEntry struct {
	key     factKey
	f       fact
	expires time.Time
}

// flight is a read of one fact in progress, which concurrent checks of
// the same fact wait for instead of reading the capture again.
type flight struct {
	done chan struct{}
	f    fact
	err  error
}

// fact returns what the capture of source read for t says of target,
// if that capture's time lies in [lo, hi]: from the cache, from a read
// of it already in flight, or read through src. A failed read is an
// error and is not cached.
func (vf *Verifier) fact(ctx context.Context, src Reader, source string, t time.Time, target string, lo, hi time.Time) (fact, error) {
	f, err := vf.lookup(ctx, src, factKey{source: source, target: target, t: t.UnixNano()}, t)
	if err != nil {
		return fact{}, err
	}
	if f.at.Before(lo) || f.at.After(hi) {
		return fact{}, fmt.Errorf("%w: %s at %s", errNoCapture, source, t.UTC().Format(time.RFC3339))
	}
	return f, nil
}

func (vf *Verifier) lookup(ctx context.Context, src Reader, k factKey, t time.Time) (fact, error) {
	for {
		if f, ok := vf.cached(k); ok {
			vf.hits.Add(1)
			return f, nil
		}
		if err := ctx.Err(); err != nil {
			return fact{}, err
		}
		vf.mu.Lock()
		if vf.flights == nil {
			vf.flights = map[factKey]*flight{}
		}
		fl, waiting := vf.flights[k]
		if !waiting {
			fl = &flight{done: make(chan struct{})}
			vf.flights[k] = fl
		}
		vf.mu.Unlock()
		if !waiting {
			fl.f, fl.err = vf.read(ctx, src, k, t)
			vf.mu.Lock()
			delete(vf.flights, k)
			vf.mu.Unlock()
			close(fl.done)
			return fl.f, fl.err
		}
		select {
		case <-fl.done:
		case <-ctx.Done():
			return fact{}, ctx.Err()
		}
		if fl.err == nil {
			vf.hits.Add(1)
			return fl.f, nil
		}
		// The first asker's deadline may have ended its read: read again
		// under this one's.
		ended := errors.Is(fl.err, context.Canceled) || errors.Is(fl.err, context.DeadlineExceeded)
		if !ended || ctx.Err() != nil {
			return fact{}, fl.err
		}
	}
}

// read reads the capture of k's source for t and caches what it says of
// k's target.
func (vf *Verifier) read(ctx context.Context, src Reader, k factKey, t time.Time) (fact, error) {
	vf.reads.Add(1)
	v, c, err := src.Get(ctx, k.source, t)
	if err != nil {
		return fact{}, fmt.Errorf("links verify %s: %w", k.source, err)
	}
	ls, err := Carried(k.source, v, c)
	if err != nil {
		return fact{}, err
	}
	a, ok := ls[k.target]
	f := fact{at: v.Time, carries: ok, anchor: a}
	vf.store(k, f)
	return f, nil
}

func (vf *Verifier) now() time.Time {
	if vf.Now != nil {
		return vf.Now()
	}
	return time.Now()
}

func (vf *Verifier) cached(k factKey) (fact, bool) {
	vf.mu.Lock()
	defer vf.mu.Unlock()
	e, ok := vf.items[k]
	if !ok {
		return fact{}, false
	}
	fe := e.Value.(*factEntry)
	if !vf.now().Before(fe.expires) {
		vf.lru.Remove(e)
		delete(vf.items, k)
		return fact{}, false
	}
	vf.lru.MoveToFront(e)
	return fe.f, true
}

func (vf *Verifier) store(k factKey, f fact) {
	ttl := vf.TTL
	if ttl <= 0 {
		ttl = DefaultVerifyTTL
	}
	size := vf.Cache
	if size <= 0 {
		size = DefaultVerifyCache
	}
	vf.mu.Lock()
	defer vf.mu.Unlock()
	if vf.items == nil {
		vf.items = map[factKey]*list.Element{}
		vf.lru = list.New()
	}
	fe := &factEntry{key: k, f: f, expires: vf.now().Add(ttl)}
	if e, ok := vf.items[k]; ok {
		e.Value = fe
		vf.lru.MoveToFront(e)
		return
	}
	vf.items[k] = vf.lru.PushFront(fe)
	for vf.lru.Len() > size {
		last := vf.lru.Back()
		vf.lru.Remove(last)
		delete(vf.items, last.Value.(*factEntry).key)
	}
}

// cacheLen returns the cached facts (tests).
func (vf *Verifier) cacheLen() int {
	vf.mu.Lock()
	defer vf.mu.Unlock()
	return len(vf.items)
}
