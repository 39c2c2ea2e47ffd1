package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/throttle"
)

// outcome is how a fetch ended.
type outcome uint8

const (
	// abandoned: ctx ended before an outcome was recorded; the entry must
	// stay queued.
	abandoned outcome = iota
	// failed: an error was counted (Stats.ErrorsByKind) and nothing stored.
	failed
	// refreshed: a 304, or the same status and payload as the newest
	// version; only the crawl state changed.
	refreshed
	// stored: the answer went to the archive as a version (the archive
	// may find it equal to the newest one and add nothing).
	stored
	// deferred: the archive failed in a way that may pass; the error was
	// counted and the entry stays queued, retried after a back-off.
	deferred
	// superseded: a new day began before the request went out. Its queue
	// holds the URL again if this node owns it, so the old day's entry
	// ends unfetched rather than fetch the URL twice in the new day.
	superseded
)

// finished reports whether the entry may leave the queue.
func (o outcome) finished() bool { return o != abandoned && o != deferred }

// class is the crawler's reading of a response status.
type class uint8

const (
	classPage        class = iota // 2xx: stored, its links followed
	classRedirect                 // 3xx but 304: stored, its target forwarded
	classNotModified              // 304 to a conditional GET: the state is refreshed
	classError                    // 4xx, 5xx: stored, counted, its links not followed
	classOther                    // anything else (1xx, 304 unasked, 6xx+): counted
)

// classify returns the class of status code; conditional tells whether the
// request carried validators.
func classify(code int, conditional bool) class {
	switch {
	case code == http.StatusNotModified && conditional:
		return classNotModified
	case code == http.StatusNotModified:
		return classOther
	case code >= 200 && code < 300:
		return classPage
	case code >= 300 && code < 400:
		return classRedirect
	case code >= 400 && code < 600:
		return classError
	}
	return classOther
}

// fetch fetches one URL conditionally and records the outcome: a new
// version is stored and its new links forwarded; a 304 or an unchanged
// payload only refreshes the crawl state. It holds l's request slots
// from sending the request until the body is read, so that the next
// fetch of the host goes out while the archive and the forwarder do their
// part. The steps: the prior crawl state and the request (newRequest),
// the response's class (classify), the body (readBody) and the page's
// digest and links (process), then storing and forwarding (store). An
// entry of an epoch (Crawler.epoch) a new day has ended is not fetched.
func (c *Crawler) fetch(ctx context.Context, e entry, u *url.URL, l *hostLease) outcome {
	raw, epoch := e.url, e.epoch
	st, err := c.state(ctx, raw, e.state)
	hasState := err == nil
	if err != nil && !errors.Is(err, archive.ErrNotFound) {
		if ctx.Err() != nil {
			return abandoned
		}
		c.count(KindArchive, raw, fmt.Errorf("crawl state: %w", err))
		return failed
	}
	reqCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rec headRecorder
	reqCtx = rec.trace(reqCtx)
	req, err := c.newRequest(reqCtx, raw, st, hasState)
	if err != nil {
		c.count(KindBadURL, raw, err)
		return failed
	}
	if !l.acquire(ctx) {
		return abandoned
	}
	defer l.release()
	// The waits for the host's budget, a claim and a slot can outlast the
	// day the entry was queued for.
	if o, ok := c.beginSend(ctx, epoch); !ok {
		return o
	}
	sent := time.Now()
	resp, err := c.cfg.Client.Do(req)
	c.endSend()
	if err != nil {
		if ctx.Err() != nil {
			return abandoned
		}
		c.count(errKind(err), raw, err)
		return failed
	}
	defer resp.Body.Close()
	took := time.Since(sent)
	now := c.cfg.Clock()
	c.mu.Lock()
	c.st.fetched++
	c.st.response += took
	c.mu.Unlock()

	return c.answer(ctx, e, u, resp, rec.head(req, resp.Proto), st, hasState, now, l)
}

// answer handles the response to e's request (u, made with crawl state
// st when hasState, its head as sent in head, see reqhead.go), received
// at now: a 304 refreshes the state, an
// error status is recorded, a body is read (releasing l's request slots)
// and, unless it is not kept, processed and stored.
func (c *Crawler) answer(ctx context.Context, e entry, u *url.URL, resp *http.Response, head []byte, st archive.CrawlState, hasState bool, now time.Time, l *hostLease) outcome {
	raw := e.url
	code := resp.StatusCode
	cl := classify(code, hasState)
	switch cl {
	case classNotModified:
		l.release()
		return c.refresh(ctx, raw, st, now)
	case classOther:
		c.count(KindStatusOther, raw, fmt.Errorf("status %d", code))
		return failed
	case classError:
		// An error answer is the archive's record of the URL that day (a
		// deleted page replays as its 404 from then on) and keeps the URL
		// known to whoever holds the range next; its links are not followed.
		kind := KindStatus4xx
		if code >= 500 {
			kind = KindStatus5xx
		}
		c.count(kind, raw, fmt.Errorf("status %d", code))
	}

	body, unkept, err := c.readBody(ctx, raw, resp, cl)
	l.release()
	if err != nil {
		if ctx.Err() != nil {
			return abandoned
		}
		c.count(errKind(err), raw, err)
		return failed
	}
	if unkept != "" {
		return c.recordUnkept(ctx, raw, resp, head, now, unkept, st, hasState)
	}
	// Hold the body's bytes (at most MaxBody) against the processing budget
	// until done.
	if err := c.bodies.Acquire(ctx, int64(len(body))); err != nil {
		return abandoned
	}
	defer c.bodies.Release(int64(len(body)))
	p := c.process(u, resp, cl, body, st, hasState)
	if p.refused {
		c.count(KindContentType, raw, fmt.Errorf("sniffed content type %q", p.ctype))
		return c.recordUnkept(ctx, raw, resp, head, now, truncatedType, st, hasState)
	}
	return c.store(ctx, raw, resp, head, body, p, st, now, e.redirects)
}

// newRequest builds the conditional GET of raw: the crawler's identity,
// and the validators of its crawl state when it has one.
func (c *Crawler) newRequest(ctx context.Context, raw string, st archive.CrawlState, hasState bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	setIdentity(req, c.cfg.UserAgent, c.cfg.From)
	if hasState {
		if st.ETag != "" {
			req.Header.Set("If-None-Match", st.ETag)
		}
		if st.LastModified != "" {
			req.Header.Set("If-Modified-Since", st.LastModified)
		}
	}
	return req, nil
}

// refresh records a 304: the check's time, as a revisit when the archive
// keeps them (Deps.Touch) and the URL has a version, else in the crawl
// state. A check the archive recorded leaves the state as it was (its
// Checked the last answer that was not a 304): a 304 is most of a revisit
// day's fetches, and rewriting the state, outlinks and all, was most of
// their index writes and of the compaction that rewrites them again.
func (c *Crawler) refresh(ctx context.Context, raw string, st archive.CrawlState, now time.Time) outcome {
	touched := false
	if t := c.deps.Touch; t != nil {
		var err error
		if ts, ok := t.(StateToucher); ok {
			err = ts.TouchState(ctx, raw, now, st)
		} else {
			err = t.Touch(ctx, raw, now)
		}
		if err != nil && !errors.Is(err, archive.ErrNotFound) {
			return c.archiveErr(ctx, raw, err)
		}
		touched = err == nil
	}
	if !touched {
		st.Checked = now
		if err := c.a.SetState(ctx, raw, st); err != nil {
			return c.archiveErr(ctx, raw, err)
		}
	}
	c.deps.fetched(ctx, raw, st.LastStatus(), st.Digest)
	c.mu.Lock()
	c.st.notModified++
	c.mu.Unlock()
	return refreshed
}

// readBody reads the body of a response of class cl. A body the crawler
// does not keep — a type the operator does not keep, or over MaxBody — is
// not read (or not kept) and its WARC-Truncated reason returned instead.
func (c *Crawler) readBody(ctx context.Context, raw string, resp *http.Response, cl class) (body []byte, unkept string, err error) {
	ct := resp.Header.Get("Content-Type")
	if cl == classPage && ct != "" && !c.typeAllowed(ct) {
		c.count(KindContentType, raw, fmt.Errorf("content type %q", ct))
		return nil, truncatedType, nil
	}
	if resp.ContentLength > c.cfg.MaxBody {
		c.count(KindTooLarge, raw, fmt.Errorf("Content-Length %d over %d bytes", resp.ContentLength, c.cfg.MaxBody))
		return nil, truncatedLength, nil
	}
	body, err = readLimited(throttle.Reader(ctx, resp.Body, c.cfg.Download), resp.ContentLength, c.cfg.MaxBody)
	c.mu.Lock()
	c.st.bytes += int64(len(body))
	c.mu.Unlock()
	if err != nil {
		return nil, "", err
	}
	if int64(len(body)) > c.cfg.MaxBody {
		c.count(KindTooLarge, raw, fmt.Errorf("body over %d bytes", c.cfg.MaxBody))
		return nil, truncatedLength, nil
	}
	return body, "", nil
}

// processed is what process computes from a body.
type processed struct {
	ctype     string
	refused   bool // the sniffed type is not allowed
	digest    id.ID
	unchanged bool     // same status and payload as the newest version
	links     []string // in scope, sorted
	fresh     []string // links absent from the previous version's
	reqs      []string // the requisites among links
	noarchive bool     // the answer asks not to be archived (noarchive.go)
}

// process computes what a body means for the crawl: its sniffed type
// when the server named none, its digest, whether it changed, and for a
// changed page its links (a redirect's target; none for an error answer).
func (c *Crawler) process(u *url.URL, resp *http.Response, cl class, body []byte, st archive.CrawlState, hasState bool) processed {
	p := processed{ctype: resp.Header.Get("Content-Type")}
	if cl == classPage && p.ctype == "" {
		p.ctype = http.DetectContentType(body)
		if p.refused = !c.typeAllowed(p.ctype); p.refused {
			return p
		}
	}
	p.digest = id.Sum(body)
	if p.unchanged = hasState && p.digest == st.Digest && st.LastStatus() == resp.StatusCode; p.unchanged {
		return p
	}
	switch cl {
	case classRedirect:
		if loc := resp.Header.Get("Location"); loc != "" {
			p.links, p.reqs = c.redirectLinks(u, ExtractLocation(u, loc))
		}
	case classPage:
		p.links, p.reqs = c.pageLinks(u, p.ctype, body)
	}
	p.fresh = newLinks(p.links, st.Outlinks)
	p.noarchive = !c.cfg.KeepNoArchive && noArchive(resp.Header, p.ctype, body, c.robots.agent)
	return p
}

// store records a processed answer (to the request of head): an
// unchanged one refreshes the crawl state; a changed one forwards its new links (a redirect's target with
// the entry's redirect depth, see redirect.go), then goes to the archive
// with its crawl state.
func (c *Crawler) store(ctx context.Context, raw string, resp *http.Response, head []byte, body []byte, p processed, st archive.CrawlState, now time.Time, redirects int) outcome {
	next := archive.CrawlState{
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		Status:       resp.StatusCode,
		Digest:       p.digest,
		Outlinks:     st.Outlinks,
		Checked:      now,
	}
	if p.unchanged {
		// The server answered a conditional GET with the same bytes.
		if err := c.a.SetState(ctx, raw, next); err != nil {
			return c.archiveErr(ctx, raw, err)
		}
		c.deps.fetched(ctx, raw, next.Status, next.Digest)
		c.mu.Lock()
		c.st.unchanged++
		c.mu.Unlock()
		return refreshed
	}

	// The links travel before the version is stored: Put waits for its
	// index group's sync, and the crawl's frontier need not. If Put then
	// fails, the state keeps the old outlinks, so the next visit forwards
	// the links again; their owners' seen tests absorb the repeat.
	var fwdErr error
	if len(p.fresh) > 0 {
		sent := len(p.fresh)
		if classify(resp.StatusCode, false) == classRedirect {
			sent, fwdErr = c.followRedirect(ctx, raw, p.fresh, p.reqs, redirects)
		} else {
			fwdErr = c.forward(ctx, p.fresh, p.reqs)
		}
		if fwdErr != nil && ctx.Err() != nil {
			return abandoned
		}
		if fwdErr == nil {
			c.mu.Lock()
			c.st.forwarded += int64(sent)
			c.mu.Unlock()
		}
	}
	next.Outlinks = p.links
	if fwdErr != nil {
		// Keep the old state (digest, validators, outlinks): the next
		// visit sees a change again and forwards the links then.
		next = st
		next.Checked = now
	}
	if p.noarchive {
		return c.skipNoArchive(ctx, raw, next, fwdErr)
	}
	if fwdErr == nil {
		if o, done := c.browse(ctx, raw, resp, body, p, st.Outlinks, next, now); done {
			return o
		}
	}
	// Told before Put: a record another member captured with this
	// payload earlier is stored first, and Put then finds it the newest
	// version of the same payload and stores nothing more.
	c.deps.fetched(ctx, raw, resp.StatusCode, p.digest)
	capture := archive.Capture{URL: raw, Time: now, Status: resp.StatusCode, Header: resp.Header, Body: body, Digest: p.digest, State: &next, Request: head}
	v, added, err := c.a.Put(ctx, capture)
	if err != nil {
		return c.archiveErr(ctx, raw, err)
	}
	if added && !c.awaitCopies(ctx, raw, v) {
		return abandoned
	}
	if fwdErr != nil {
		c.count(KindForward, raw, fwdErr)
		return failed
	}
	c.countStored(added)
	return stored
}

// archiveErr handles a failed Put of raw's page. A full quota or a
// capture the archive cannot store finishes the entry (failed, counted);
// any other error may pass (a disk that fills and empties, a store being
// reopened), so the entry stays queued (deferred), to be fetched again
// when the host's queue is read once more, after a back-off that doubles
// with each failure in a row (storeretry.go).
func (c *Crawler) archiveErr(ctx context.Context, raw string, err error) outcome {
	if ctx.Err() != nil {
		return abandoned
	}
	switch {
	case errors.Is(err, archive.ErrQuota):
		c.count(KindQuota, raw, err)
		return failed
	case errors.Is(err, archive.ErrBadCapture):
		c.count(KindArchive, raw, err)
		return failed
	}
	c.count(KindArchive, raw, err)
	c.retry.wait(ctx, c.retry.failed())
	return deferred
}

// keepLink admits a canonical link, parsed, that the scope admits.
func (c *Crawler) keepLink(u *url.URL, s string) (string, bool) {
	s, kind := c.scope.checkParsed(u, s)
	return s, kind == ""
}

// inScope keeps the links the scope admits, in order.
func (c *Crawler) inScope(links []string) []string {
	out := links[:0:0]
	for _, l := range links {
		u, err := url.Parse(l)
		if err != nil {
			continue
		}
		if s, kind := c.scope.checkURL(u); kind == "" {
			out = append(out, s)
		}
	}
	return out
}

// ExtractLocation returns the canonical target of a redirect's Location
// header resolved against the redirecting URL, as a one-element slice, or
// nil when it is not a valid http(s) URL.
func ExtractLocation(base *url.URL, loc string) []string {
	if base == nil {
		return nil
	}
	c, err := canon.Resolve(base, loc)
	if err != nil {
		return nil
	}
	return []string{c}
}

// newLinks returns the links of cur absent from prev; both are sorted.
func newLinks(cur, prev []string) []string {
	var out []string
	j := 0
	for _, l := range cur {
		for j < len(prev) && prev[j] < l {
			j++
		}
		if j < len(prev) && prev[j] == l {
			continue
		}
		out = append(out, l)
	}
	return out
}

// presize is the largest Content-Length readLimited allocates for before the
// bytes arrive: a server that announces MaxBody and trickles would
// otherwise make every fetch in flight hold MaxBody.
const presize = 1 << 20

// readLimited reads a response body of at most max bytes (one more tells
// the caller it was over). With a Content-Length of at most max and
// presize it reads into one buffer of that size instead of growing one as
// io.ReadAll does; a body shorter than its Content-Length is
// io.ErrUnexpectedEOF.
func readLimited(r io.Reader, contentLength, max int64) ([]byte, error) {
	if contentLength < 0 || contentLength > max || contentLength > presize {
		return io.ReadAll(io.LimitReader(r, max+1))
	}
	body := make([]byte, contentLength)
	n, err := io.ReadFull(r, body)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // nothing at all of a non-empty body
	}
	if err != nil {
		return body[:n], fmt.Errorf("body of %d bytes, Content-Length %d: %w", n, contentLength, err)
	}
	// net/http stops at Content-Length; a reader that does not gets read
	// on, as io.ReadAll would, up to max+1 bytes in all.
	var extra [1]byte
	if m, _ := io.ReadFull(r, extra[:]); m > 0 {
		body = append(body, extra[0])
		rest, err := io.ReadAll(io.LimitReader(r, max+1-int64(len(body))))
		return append(body, rest...), err
	}
	return body, nil
}

// state returns the crawl state of raw: its own, or, when it has none and
// the archive can derive one, the state of its newest stored version (see
// VersionStater). It returns an error wrapping archive.ErrNotFound when
// neither can be had (a version that does not verify counts as none: the
// page is fetched unconditionally).
//
// pre, when it is fresh (preState.fresh), is the state read with the
// entry's batch, and is used instead of a read of the archive's own.
func (c *Crawler) state(ctx context.Context, raw string, pre *preState) (archive.CrawlState, error) {
	var st archive.CrawlState
	var err error
	if pre.fresh() {
		st, err = pre.st, pre.err
	} else {
		st, err = c.a.State(ctx, raw)
	}
	if !errors.Is(err, archive.ErrNotFound) {
		return st, err
	}
	vs := c.deps.Versions
	if vs == nil {
		return st, err
	}
	st, verr := vs.StateFromVersion(ctx, raw)
	if verr != nil {
		if ctx.Err() != nil {
			return st, verr
		}
		return archive.CrawlState{}, err
	}
	return st, nil
}

// WARC-Truncated reasons of the records recordUnkept writes.
const (
	truncatedLength = "length"      // the body is over MaxBody
	truncatedType   = "unspecified" // the operator does not keep the type
)

// recordUnkept stores the archive's record of an answer whose body is not
// kept — a type the operator does not keep, or a body over MaxBody — as a
// version with the status and headers, an empty payload and a
// WARC-Truncated reason: the URL's answer that day is kept, and the URL
// travels with its range like any stored one. An answer with the same
// status and headers' validators as the last one stores nothing new (the
// archive compares status and the empty payload).
func (c *Crawler) recordUnkept(ctx context.Context, raw string, resp *http.Response, head []byte, now time.Time, reason string, st archive.CrawlState, hasState bool) outcome {
	next := archive.CrawlState{
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		Status:       resp.StatusCode,
		Digest:       id.Sum(nil),
		Checked:      now,
	}
	if hasState {
		next.Outlinks = st.Outlinks
	}
	if !c.cfg.KeepNoArchive && noArchive(resp.Header, "", nil, c.robots.agent) {
		return c.skipNoArchive(ctx, raw, next, nil)
	}
	capture := archive.Capture{URL: raw, Time: now, Status: resp.StatusCode, Header: resp.Header,
		Digest: next.Digest, Truncated: reason, State: &next, Request: head}
	v, added, err := c.a.Put(ctx, capture)
	if err != nil {
		return c.archiveErr(ctx, raw, err)
	}
	c.countStored(added)
	if added && !c.awaitCopies(ctx, raw, v) {
		return abandoned
	}
	return stored
}

// countStored counts a Put: a new version, or an answer equal to the newest.
func (c *Crawler) countStored(added bool) {
	c.retry.ok()
	c.mu.Lock()
	defer c.mu.Unlock()
	if added {
		c.st.newVersions++
	} else {
		c.st.unchanged++
	}
}

// beginSend lets a request of the day epoch go out: it waits while a new
// day is about to begin (holdSends), then reports superseded if the day
// ended, or counts the request as on its way until endSend.
func (c *Crawler) beginSend(ctx context.Context, epoch uint64) (outcome, bool) {
	for {
		c.mu.Lock()
		gate := c.sendGate
		if gate == nil {
			stale := c.epoch != epoch
			if !stale {
				c.sending++
			}
			c.mu.Unlock()
			if stale {
				return superseded, false
			}
			return 0, true
		}
		c.mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			return abandoned, false
		}
	}
}

// endSend records that a request begun by beginSend was answered (its
// head) or failed.
func (c *Crawler) endSend() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sending--
	if c.sending == 0 && c.sent != nil {
		close(c.sent)
		c.sent = nil
	}
}

// holdSends stops requests from going out and waits, at most
// Config.DaySwitchWait, for those on their way to be answered, so that a
// site sees the old day's requests before the new day's; it returns how
// long it waited. openSends lets requests go again.
func (c *Crawler) holdSends() time.Duration {
	start := time.Now()
	c.mu.Lock()
	c.sendGate = make(chan struct{})
	var sent chan struct{}
	if c.sending > 0 {
		sent = make(chan struct{})
		c.sent = sent
	}
	c.mu.Unlock()
	if sent != nil {
		t := time.NewTimer(c.cfg.DaySwitchWait)
		select {
		case <-sent:
		case <-t.C:
		case <-c.ctx.Done():
		}
		t.Stop()
	}
	return time.Since(start)
}

// openSends ends holdSends.
func (c *Crawler) openSends() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.sendGate)
	c.sendGate, c.sent = nil, nil
}
