package crawl

import (
	"fmt"
	"net/url"
	"runtime"
	"sync"
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
	slots := make(chan struct{}, c.cfg.HostConns)
	var inflight sync.WaitGroup
	defer inflight.Wait()
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
				c.count(KindRobots, e.url, rules.err)
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
			if err := c.cfg.Budget.Wait(ctx, host, rules.rules.CrawlDelay()); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.count(KindFetch, e.url, err)
				c.finish(e, false, true)
				continue
			}
			if !acquire(ctx, c.proc) {
				return
			}
			if !acquire(ctx, slots) {
				<-c.proc
				return
			}
			if !acquire(ctx, c.sem) {
				<-slots
				<-c.proc
				return
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
				var once sync.Once
				release := func() {
					once.Do(func() {
						<-c.sem
						<-slots
						// Let the host loop, just woken by the free
						// slot, send the next request before this
						// goroutine stores and parses the page: with
						// few cores it would otherwise wait behind the
						// processing, and the connection would idle.
						runtime.Gosched()
					})
				}
				defer release()
				c.finish(e, true, c.fetch(ctx, e.url, u, release))
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
