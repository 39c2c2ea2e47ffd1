package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"
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
	hs := newHostSlots(c.cfg.HostConns, c.sem)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	var after []byte
	c.mu.Lock()
	epoch := c.epoch
	c.mu.Unlock()
	for ctx.Err() == nil {
		waitFrom := time.Now()
		c.dayMu.RLock()
		c.mu.Lock()
		gen := h.gen
		if c.epoch != epoch {
			epoch, after = c.epoch, nil
		}
		c.mu.Unlock()
		batch, err := c.q.next(host, after, hostBatch)
		c.dayMu.RUnlock()
		if w := time.Since(waitFrom); w > time.Millisecond {
			c.mu.Lock()
			c.st.queueWait = max(c.st.queueWait, w)
			c.mu.Unlock()
		}
		if err != nil {
			c.count(KindQueue, "", err)
			inflight.Wait()
			c.mu.Lock()
			c.doneLocked(host)
			c.mu.Unlock()
			return
		}
		if len(batch) == 0 {
			// Nothing left to read: wait for new entries or for the
			// fetches in flight (whose links may add some); leave when
			// neither can come.
			c.mu.Lock()
			switch {
			case h.gen != gen || c.epoch != epoch:
				c.mu.Unlock()
				continue
			case h.inflight == 0 && after != nil:
				// Concurrent adds commit out of order, so an entry may
				// sit behind the cursor (a lower sequence number written
				// after a higher one was read). Nothing of this host is in
				// flight, so every entry still queued is undispatched:
				// read once more from the start before leaving.
				after = nil
				c.mu.Unlock()
				continue
			case h.inflight == 0:
				c.doneLocked(host)
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			select {
			case <-h.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		for _, e := range batch {
			c.mu.Lock()
			stale := c.epoch != epoch
			c.mu.Unlock()
			if stale || ctx.Err() != nil {
				break // a new day reset the queue: read again
			}
			if !c.waitUnpaused(ctx) {
				return
			}
			after = e.key
			e.epoch = epoch
			// At most one fetch per connection gets ready (crawl state
			// read, request built) while the connections are busy.
			if !acquire(ctx, hs.ahead) {
				return
			}
			if !acquire(ctx, c.proc) {
				<-hs.ahead
				return
			}
			u, verdict := c.admit(ctx, host, e)
			if verdict != admitted {
				<-c.proc
				<-hs.ahead
				if verdict == shuttingDown {
					return
				}
				c.finish(e, false, verdict == dropped)
				continue
			}
			c.mu.Lock()
			c.st.inFlight++
			if e.epoch == c.epoch {
				c.curInFlight++
			}
			h.inflight++
			c.mu.Unlock()
			inflight.Add(1)
			go func(e entry, u *url.URL) {
				defer inflight.Done()
				defer func() {
					c.mu.Lock()
					h.inflight--
					c.mu.Unlock()
					h.signal()
				}()
				defer func() { <-c.proc }()
				l := &hostLease{s: hs}
				defer l.release()
				c.finish(e, true, c.fetch(ctx, e, u, l).finished())
			}(e, u)
		}
		if c.othersWaiting() {
			inflight.Wait()
			c.mu.Lock()
			if len(c.waiting) > 0 {
				c.yieldLocked(host, h)
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
		}
	}
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
