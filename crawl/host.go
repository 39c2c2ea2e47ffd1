package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
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
	hs := newHostSlots(c.cfg.HostConns, c.sem, c.keepAlive, &c.openConns)
	var inflight sync.WaitGroup
	defer func() {
		inflight.Wait()
		hs.close()
	}()
	var after []byte
	c.mu.Lock()
	epoch := c.epoch
	c.mu.Unlock()
	for ctx.Err() == nil {
		c.dayMu.RLock()
		c.mu.Lock()
		gen := h.gen
		if c.epoch != epoch {
			epoch, after = c.epoch, nil
		}
		c.mu.Unlock()
		batch, err := c.q.next(host, after, hostBatch)
		c.dayMu.RUnlock()
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
			after = e.key
			e.epoch = epoch
			u, err := url.Parse(e.url)
			if err != nil {
				c.count(KindBadURL, e.url, err)
				c.finish(e, false, true)
				continue
			}
			rules, err := c.robots.get(ctx, u.Scheme+"://"+u.Host)
			if err != nil || ctx.Err() != nil {
				return // shutting down: the entry stays queued
			}
			if rules.err != nil {
				kind := KindRobots
				if errors.Is(rules.err, ErrInternalAddress) {
					kind = KindInternal
				}
				c.count(kind, e.url, rules.err)
				c.finish(e, false, true)
				continue
			}
			if !rules.rules.Allowed(pathQuery(u)) {
				var why error // nil: the site's rules say so
				if st := rules.rec.Status; st < 200 || st >= 300 {
					why = fmt.Errorf("robots.txt unavailable (status %d): everything disallowed", st)
				}
				c.count(KindRobots, e.url, why)
				c.finish(e, false, true)
				continue
			}
			// At most one fetch per connection gets ready (crawl state
			// read, request built) while the connections are busy; it
			// takes the first one freed.
			if !acquire(ctx, hs.ahead) {
				return
			}
			if err := c.cfg.Budget.Wait(ctx, host, rules.rules.CrawlDelay()); err != nil {
				<-hs.ahead
				if ctx.Err() != nil {
					return
				}
				c.count(KindFetch, e.url, err)
				c.finish(e, false, true)
				continue
			}
			if !acquire(ctx, c.proc) {
				<-hs.ahead
				return
			}
			if !c.owned(ctx, e.url) {
				<-c.proc
				<-hs.ahead
				c.finish(e, false, c.passOn(ctx, e.url))
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
				l := &connLease{s: hs}
				defer l.release()
				c.finish(e, true, c.fetch(ctx, e.url, u, l))
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

// hostSlots are a host loop's connections and the slots that bound its
// fetches.
type hostSlots struct {
	conns chan *hostConn // HostConns entries: an open connection (holding an idle token), or nil
	ahead chan struct{}  // fetches started and not done with their connection: 2*HostConns
	sem   chan struct{}  // the crawler's request slots (Concurrency), shared by all hosts
	idle  chan struct{}  // the crawler's kept-alive connections between requests (Concurrency), shared
	open  *atomic.Int64  // the crawler's connections open now
}

func newHostSlots(conns int, sem, idle chan struct{}, open *atomic.Int64) *hostSlots {
	hs := &hostSlots{
		conns: make(chan *hostConn, conns),
		ahead: make(chan struct{}, 2*conns),
		sem:   sem,
		idle:  idle,
		open:  open,
	}
	for range conns {
		hs.conns <- nil
	}
	return hs
}

// close closes the open connections; every fetch must have released its
// lease.
func (hs *hostSlots) close() {
	for range cap(hs.conns) {
		if hc := <-hs.conns; hc != nil {
			hs.wake(hc)
			hc.Close()
		}
	}
}

// keep parks hc between requests if the crawler keeps fewer than
// Concurrency such connections (it then holds an idle token, as every
// connection in conns does); otherwise it closes hc and returns nil.
func (hs *hostSlots) keep(hc *hostConn) *hostConn {
	select {
	case hs.idle <- struct{}{}:
		return hc
	default:
		hc.Close()
		return nil
	}
}

// wake gives back the idle token of hc, a connection taken from conns
// for a request (nothing for nil).
func (hs *hostSlots) wake(hc *hostConn) {
	if hc != nil {
		<-hs.idle
	}
}

// connLease is one fetch's hold on a connection of its host loop: the
// ahead slot the loop took for it, then (acquire) a connection and a slot
// of the crawler's, until release.
type connLease struct {
	s    *hostSlots
	hc   *hostConn      // the connection acquired, until an exchange takes it (nil: none open)
	ex   *exchange      // the exchange on the crawler's own connection
	resp *http.Response // the response when a Client did the exchange
	held bool           // a connection and a crawler slot are held
	done bool
}

// acquire waits for a free connection of the host and a free slot of the
// crawler's; false means ctx ended first.
func (l *connLease) acquire(ctx context.Context) bool {
	select {
	case l.hc = <-l.s.conns:
	case <-ctx.Done():
		return false
	}
	if !acquire(ctx, l.s.sem) {
		l.s.conns <- l.hc
		l.hc = nil
		return false
	}
	// Counted as kept alive until its request is let through.
	l.s.wake(l.hc)
	l.held = true
	return true
}

// do sends req on the leased connection, or through client when it is not
// nil (its connections are guarded already), with g checking the
// addresses of the lease's own, and returns the response, whose body must be read before release.
func (l *connLease) do(req *http.Request, client *http.Client, tlsConf *tls.Config, g *guard) (*http.Response, error) {
	if client != nil {
		resp, err := client.Do(req)
		l.resp = resp
		return resp, err
	}
	hc := l.hc
	l.hc = nil
	ex, err := roundTrip(req, hc, tlsConf, g, time.Now(), l.s.open)
	if err != nil {
		return nil, err
	}
	l.ex = ex
	return ex.resp, nil
}

// release ends the exchange, gives back the connection (kept alive when
// the response allows it) and the slots; calls after the first do nothing.
func (l *connLease) release() {
	if l.done {
		return
	}
	l.done = true
	if l.held {
		hc := l.hc
		if l.ex != nil {
			hc = l.ex.finish(time.Now())
		}
		if hc != nil {
			hc = l.s.keep(hc)
		}
		if l.resp != nil {
			l.resp.Body.Close()
		}
		l.s.conns <- hc
		<-l.s.sem
	}
	<-l.s.ahead
	// Let the fetch just handed the connection send its request before
	// this goroutine stores and parses its page: with few cores it would
	// otherwise wait behind the processing, and the connection would idle.
	runtime.Gosched()
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

// Relocator is implemented by a Forwarder that can tell, at fetch time,
// that a queued URL's range has moved to another node, and deliver it
// there. With one, the crawler asks Moved just before every fetch; without
// one it fetches every entry it queued.
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
	r, ok := c.f.(Relocator)
	return !ok || !r.Moved(ctx, url)
}

// passOn hands an entry this node no longer owns to its owner and
// reports whether the entry may leave the queue (false: passing it on
// failed, it stays for the next read or day).
func (c *Crawler) passOn(ctx context.Context, url string) bool {
	err := c.f.(Relocator).PassOn(ctx, url)
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
	return true
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
