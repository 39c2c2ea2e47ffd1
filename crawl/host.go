package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
)

// runHost fetches the pending entries of one host in queue order, paced
// by the budget and the robots.txt Crawl-delay, at most HostConns at a
// time, until the host has nothing pending (it then leaves c.hosts; Add
// wakes it again when entries arrive) or until, after a batch, other hosts
// wait for a loop (it then goes to the back of the waiting line).
//
// A loop reads entries after the last key it read, so the entries in
// flight (deleted only when finished) are never read twice. It waits for
// its fetches before it exits or yields, so a loop started later never
// sees them.
func (c *Crawler) runHost(host string, h *hostState) {
	defer c.wg.Done()
	ctx := c.ctx
	l := &hostLoop{c: c, host: host, h: h, hs: newHostSlots(c.cfg.HostConns, c.sem)}
	defer l.inflight.Wait()
	c.mu.Lock()
	l.epoch = c.epoch
	c.mu.Unlock()
	for ctx.Err() == nil {
		batch, gen, err := l.read()
		if err != nil {
			c.count(KindQueue, "", err)
			l.inflight.Wait()
			c.mu.Lock()
			c.doneLocked(host)
			c.mu.Unlock()
			return
		}
		if len(batch) == 0 {
			if !l.idle(ctx, gen) {
				return
			}
			continue
		}
		if !l.dispatch(ctx, batch) || l.yield() {
			return
		}
	}
}

// hostLoop is the state of one host's loop (runHost).
type hostLoop struct {
	c        *Crawler
	host     string
	h        *hostState
	hs       *hostSlots
	inflight sync.WaitGroup // the loop's fetches
	after    []byte         // the last queue key read; nil: the start
	epoch    uint64         // the day the loop reads
}

// read reads the next batch of the host's entries, after the last key
// read (from the start again when a new day began), and returns it with
// the host's generation when it read.
func (l *hostLoop) read() ([]entry, uint64, error) {
	c := l.c
	waitFrom := time.Now()
	c.dayMu.RLock()
	c.mu.Lock()
	gen := l.h.gen
	if c.epoch != l.epoch {
		l.epoch, l.after = c.epoch, nil
	}
	c.mu.Unlock()
	batch, err := c.q.next(l.host, l.after, hostBatch)
	c.dayMu.RUnlock()
	if w := time.Since(waitFrom); w > time.Millisecond {
		c.mu.Lock()
		c.st.queueWait = max(c.st.queueWait, w)
		c.mu.Unlock()
	}
	return batch, gen, err
}

// idle handles a read that found nothing (idleStep): it waits for new
// entries or for the fetches in flight (whose links may add some), and
// reports false when the loop ends — nothing can come, or ctx ended.
func (l *hostLoop) idle(ctx context.Context, gen uint64) bool {
	c := l.c
	c.mu.Lock()
	switch idleStep(l.h.gen != gen || c.epoch != l.epoch, l.h.inflight, l.after == nil) {
	case idleReread:
		c.mu.Unlock()
		return true
	case idleRewind:
		l.after = nil
		c.mu.Unlock()
		return true
	case idleLeave:
		c.doneLocked(l.host)
		c.mu.Unlock()
		return false
	}
	c.mu.Unlock()
	select {
	case <-l.h.wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// dispatch admits and starts the fetches of batch, paced by the host's
// slots, until a new day resets the queue. It reports false when the
// loop must end (shutdown).
func (l *hostLoop) dispatch(ctx context.Context, batch []entry) bool {
	c := l.c
	for i, e := range batch {
		c.mu.Lock()
		stale := c.epoch != l.epoch
		c.mu.Unlock()
		if stale || ctx.Err() != nil {
			return true // a new day reset the queue: read again
		}
		if !c.waitUnpaused(ctx) {
			return false
		}
		l.after = e.key
		e.epoch = l.epoch
		// At most one fetch per connection gets ready (crawl state
		// read, request built) while the connections are busy.
		if !acquire(ctx, l.hs.ahead) {
			return false
		}
		if !acquire(ctx, c.proc) {
			<-l.hs.ahead
			return false
		}
		u, verdict := c.admit(ctx, l.host, e)
		if verdict != admitted {
			<-c.proc
			<-l.hs.ahead
			if verdict == shuttingDown {
				return false
			}
			c.finish(e, false, verdict == dropped)
			continue
		}
		// The state is wanted now, once the budget and the slots
		// admitted the fetch: read the states of the batch's rest
		// unless this one's read is still fresh.
		if !batch[i].state.fresh() {
			l.prefetch(ctx, batch[i:])
		}
		e.state = batch[i].state
		l.start(ctx, e, u)
	}
	return true
}

// preStateAge is how long a crawl state read with its batch stands in
// for a read of the fetch's own. A host's batch is its next URLs in URL
// order, whose states are consecutive entries of the index, so one
// iterator reads them a block at a time where a point read each
// searched every table that may hold it (at a million URLs most of the
// crawl state's cost: docs/scale-growth.md). dispatch reads the states
// of the batch's rest when an admitted entry's is missing or older:
// one read a batch at full speed (a batch of 32 takes about 3.5 s at 1
// M, 400 hosts at 3,700 pages/s), one every 10 s of a paced host. An
// older state is only less useful, never wrong: the state picks the
// request's validators and the outlinks new links are told from, the
// archive compares a 200's payload with the newest version, and a
// purge in between voids the state's Versioned token
// (archive.Store.States).
const preStateAge = 10 * time.Second

// preState is an entry's crawl state read with its batch: what the
// archive's State would have returned at time at.
type preState struct {
	st  archive.CrawlState
	err error
	at  time.Time
}

// fresh reports whether p was read at most preStateAge ago.
func (p *preState) fresh() bool { return p != nil && time.Since(p.at) <= preStateAge }

// prefetch reads the crawl states of batch's entries in one call, when
// the crawler's Archive reads many at once (StatesReader) and there are
// two or more. A failed read leaves each state to its fetch, which
// reads it and reports what fails.
func (l *hostLoop) prefetch(ctx context.Context, batch []entry) {
	sr, ok := l.c.a.(StatesReader)
	if !ok || len(batch) < 2 {
		return
	}
	urls := make([]string, len(batch))
	for i, e := range batch {
		urls[i] = e.url
	}
	at := time.Now()
	sts, errs, err := sr.States(ctx, urls)
	if err != nil {
		return
	}
	pre := make([]preState, len(batch))
	for i := range batch {
		pre[i] = preState{st: sts[i], err: errs[i], at: at}
		batch[i].state = &pre[i]
	}
}

// start fetches admitted entry e in its own goroutine.
func (l *hostLoop) start(ctx context.Context, e entry, u *url.URL) {
	c, h := l.c, l.h
	c.mu.Lock()
	c.st.inFlight++
	if e.epoch == c.epoch {
		c.curInFlight++
	}
	h.inflight++
	c.mu.Unlock()
	l.inflight.Add(1)
	go func() {
		defer l.inflight.Done()
		defer func() {
			c.mu.Lock()
			h.inflight--
			c.mu.Unlock()
			h.signal()
		}()
		defer func() { <-c.proc }()
		lease := &hostLease{s: l.hs}
		defer lease.release()
		c.finish(e, true, c.fetch(ctx, e, u, lease).finished())
	}()
}

// yield, after a batch, sends the host to the back of the line when
// other hosts wait for a loop, once its fetches are done, and reports
// whether it did (the loop then ends).
func (l *hostLoop) yield() bool {
	c := l.c
	if !c.othersWaiting() {
		return false
	}
	l.inflight.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sched.othersWaiting() {
		return false
	}
	c.yieldLocked(l.host, l.h)
	return true
}

// verdict is admit's decision on a queue entry.
type verdict uint8

const (
	admitted     verdict = iota // fetch it
	dropped                     // not to be fetched: counted, the entry leaves the queue
	kept                        // not fetched now: the entry stays queued (passing it on failed)
	shuttingDown                // the crawler is closing: the entry stays queued
)

// admit is the one check before a fetch of host's entry e: the URL
// parses, the site's robots.txt allows it, the host's budget gives it a
// slot (waiting for it), and this node still owns it (otherwise it is
// passed on to its owner). It returns the parsed URL when admitted.
func (c *Crawler) admit(ctx context.Context, host string, e entry) (*url.URL, verdict) {
	u, err := url.Parse(e.url)
	if err != nil {
		c.count(KindBadURL, e.url, err)
		return nil, dropped
	}
	rules, err := c.robots.get(ctx, u.Scheme+"://"+u.Host)
	if err != nil || ctx.Err() != nil {
		return nil, shuttingDown
	}
	if rules.err != nil {
		kind := KindRobots
		if errors.Is(rules.err, ErrInternalAddress) {
			kind = KindInternal
			// Refused by this node's policy, not fetched: out of the
			// day's URL-seen set, so that it is crawled the same day
			// once the policy allows it and it is offered again.
			if err := c.q.unsee(e.url); err != nil {
				c.count(KindQueue, e.url, err)
			}
		}
		c.count(kind, e.url, rules.err)
		return nil, dropped
	}
	if !rules.rules.Allowed(pathQuery(u)) {
		var why error // nil: the site's rules say so
		if st := rules.rec.Status; st < 200 || st >= 300 {
			why = fmt.Errorf("robots.txt unavailable (status %d): everything disallowed", st)
		}
		c.count(KindRobots, e.url, why)
		return nil, dropped
	}
	if err := c.cfg.Budget.Wait(ctx, host, rules.rules.CrawlDelay()); err != nil {
		if ctx.Err() != nil {
			return nil, shuttingDown
		}
		c.count(KindFetch, e.url, err)
		return nil, dropped
	}
	if !c.owned(ctx, e.url) {
		if c.passOn(ctx, e) {
			return nil, dropped
		}
		return nil, kept
	}
	return u, admitted
}

// hostSlots bound a host loop's fetches.
type hostSlots struct {
	conns chan struct{} // fetches with a request to the host under way: HostConns
	ahead chan struct{} // fetches started and not done with the host: 2*HostConns
	sem   chan struct{} // the crawler's request slots (Concurrency), shared by all hosts
}

func newHostSlots(conns int, sem chan struct{}) *hostSlots {
	return &hostSlots{
		conns: make(chan struct{}, conns),
		ahead: make(chan struct{}, 2*conns),
		sem:   sem,
	}
}

// hostLease is one fetch's hold on its host: the ahead slot the loop took
// for it, then (acquire) one of the host's request slots and one of the
// crawler's, until release.
type hostLease struct {
	s    *hostSlots
	held bool // a host slot and a crawler slot are held
	done bool
}

// acquire waits for a request slot of the host and one of the crawler's;
// false means ctx ended first.
func (l *hostLease) acquire(ctx context.Context) bool {
	if !acquire(ctx, l.s.conns) {
		return false
	}
	if !acquire(ctx, l.s.sem) {
		<-l.s.conns
		return false
	}
	l.held = true
	return true
}

// release gives back the slots; calls after the first do nothing.
func (l *hostLease) release() {
	if l.done {
		return
	}
	l.done = true
	if l.held {
		<-l.s.conns
		<-l.s.sem
	}
	<-l.s.ahead
}

// finish records the end of an entry. A finished entry leaves the queue;
// one cut short by shutdown stays for the next start.
func (c *Crawler) finish(e entry, wasInFlight, finished bool) {
	if finished {
		if err := c.q.done(e.key); err != nil {
			c.count(KindQueue, e.url, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	current := e.epoch == c.epoch // entries of a day that was reset do not count
	if wasInFlight {
		c.st.inFlight--
		if current {
			c.curInFlight--
		}
	}
	if finished && current {
		c.pending--
	}
}

// Relocator tells, at fetch time, that a queued URL's range has moved to
// another node, and delivers it there (Deps.Relocator). With one, the
// crawler asks Moved just before every fetch; without one it fetches every
// entry it queued.
type Relocator interface {
	// Moved reports whether url is now owned by another node. It must be
	// cheap when this node owns url.
	Moved(ctx context.Context, url string) bool
	// PassOn delivers url, which this node queued but no longer owns, to
	// its owner; it returns once the URL is durably handed over.
	PassOn(ctx context.Context, url string) error
}

// owned re-checks, just before a fetch, that this node still owns url:
// a range that moved since the entry was queued — a node joined in front
// of one of ours — is now another node's to fetch.
func (c *Crawler) owned(ctx context.Context, url string) bool {
	r := c.deps.Relocator
	return r == nil || !r.Moved(ctx, url)
}

// passOn hands an entry this node no longer owns to its owner (with its
// redirect depth when it has one and Config.Redirects is set) and reports
// whether the entry may leave the queue (false: passing it on failed, it
// stays for the next read or day).
func (c *Crawler) passOn(ctx context.Context, e entry) bool {
	url := e.url
	var err error
	if e.redirects > 0 && c.cfg.Redirects != nil {
		err = c.cfg.Redirects.SendRedirect(ctx, url, e.redirects, false)
	} else {
		err = c.deps.Relocator.PassOn(ctx, url)
	}
	c.mu.Lock()
	if err == nil {
		c.st.passedOn++
	}
	c.mu.Unlock()
	if err != nil {
		c.count(KindForward, url, fmt.Errorf("pass on an entry this node no longer owns: %w", err))
		return false
	}
	c.log.Debug("crawl: passed on an entry whose range moved", "url", url)
	c.requeueable(url)
	return true
}

// maxPassed bounds the URLs requeueable remembers for a day; past it, it
// starts afresh (a URL may then be taken out of the seen set once more).
const maxPassed = 1 << 16

// requeueable takes url, just passed on, out of today's URL-seen set the
// first time it is passed on that day: the ring may route it back here
// (a lookup that disagrees with the fetch-time check while a ring forms),
// and a URL dropped as seen today would be fetched by no one. Later
// passes leave it seen, so two disagreeing views cannot pass a URL around
// for the rest of the day.
func (c *Crawler) requeueable(url string) {
	day := c.CurrentDay() // the queue's day, which NewDay may set ahead of the clock's
	c.mu.Lock()
	if c.passedDay != day || len(c.passed) >= maxPassed {
		c.passed, c.passedDay = map[string]struct{}{}, day
	}
	_, again := c.passed[url]
	c.passed[url] = struct{}{}
	c.mu.Unlock()
	if again {
		return
	}
	if err := c.q.unsee(url); err != nil {
		c.count(KindQueue, url, err)
	}
}

func acquire(ctx interface{ Done() <-chan struct{} }, ch chan struct{}) bool {
	select {
	case ch <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// pathQuery returns what robots.txt rules match: the escaped path and the
// query.
func pathQuery(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}
