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

// fetch fetches one URL conditionally and records the outcome: a new
// version is stored and its new links forwarded; a 304 or an unchanged
// payload only refreshes the crawl state. It prepares the request, then
// takes a connection of the host's from l, and releases it once the
// response is read, so that the next fetch sends its request while the
// archive and the forwarder do their part. It returns false only when ctx
// was cancelled before an outcome was recorded (the entry must stay
// queued).
func (c *Crawler) fetch(ctx context.Context, raw string, u *url.URL, l *connLease) bool {
	st, err := c.state(ctx, raw)
	hasState := err == nil
	if err != nil && !errors.Is(err, archive.ErrNotFound) {
		if ctx.Err() != nil {
			return false
		}
		c.count(KindArchive, raw, fmt.Errorf("crawl state: %w", err))
		return true
	}
	reqCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, raw, nil)
	if err != nil {
		c.count(KindBadURL, raw, err)
		return true
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
	if !l.acquire(ctx) {
		return false
	}
	defer l.release()
	sent := time.Now()
	resp, err := l.do(req, c.clientFor(req), c.cfg.TLS, c.guard)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		c.count(errKind(err), raw, err)
		return true
	}
	defer resp.Body.Close()
	took := time.Since(sent)
	now := c.cfg.Clock()
	c.mu.Lock()
	c.st.fetched++
	c.st.response += took
	c.mu.Unlock()

	code := resp.StatusCode
	switch {
	case code == http.StatusNotModified && hasState:
		l.release()
		st.Checked = now
		if err := c.a.SetState(ctx, raw, st); err != nil {
			return c.archiveErr(ctx, raw, err)
		}
		if t, ok := c.a.(Toucher); ok {
			if err := t.Touch(ctx, raw, now); err != nil && !errors.Is(err, archive.ErrNotFound) {
				return c.archiveErr(ctx, raw, err)
			}
		}
		c.mu.Lock()
		c.st.notModified++
		c.mu.Unlock()
		return true
	case code >= 200 && code < 400 && code != http.StatusNotModified:
	case code >= 400 && code < 600:
		// An error answer is the archive's record of the URL that day (a
		// deleted page replays as its 404 from then on) and keeps the URL
		// known to whoever holds the range next; its links are not followed.
		kind := KindStatus4xx
		if code >= 500 {
			kind = KindStatus5xx
		}
		c.count(kind, raw, fmt.Errorf("status %d", code))
	default:
		c.count(KindStatusOther, raw, fmt.Errorf("status %d", code))
		return true
	}

	redirect := code >= 300 && code < 400
	failed := code >= 400
	ct := resp.Header.Get("Content-Type")
	if !redirect && !failed && ct != "" && !c.typeAllowed(ct) {
		c.count(KindContentType, raw, fmt.Errorf("content type %q", ct))
		return c.recordUnkept(ctx, raw, resp, now, truncatedType, st, hasState)
	}
	if resp.ContentLength > c.cfg.MaxBody {
		c.count(KindTooLarge, raw, fmt.Errorf("Content-Length %d over %d bytes", resp.ContentLength, c.cfg.MaxBody))
		return c.recordUnkept(ctx, raw, resp, now, truncatedLength, st, hasState)
	}
	body, err := readBody(throttle.Reader(ctx, resp.Body, c.cfg.Download), resp.ContentLength, c.cfg.MaxBody)
	l.release()
	c.mu.Lock()
	c.st.bytes += int64(len(body))
	c.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		c.count(errKind(err), raw, err)
		return true
	}
	if int64(len(body)) > c.cfg.MaxBody {
		c.count(KindTooLarge, raw, fmt.Errorf("body over %d bytes", c.cfg.MaxBody))
		return c.recordUnkept(ctx, raw, resp, now, truncatedLength, st, hasState)
	}
	// Hold the body's bytes (at most MaxBody) against the processing budget
	// until done.
	if err := c.bodies.Acquire(ctx, int64(len(body))); err != nil {
		return false // shutting down: the entry stays queued
	}
	defer c.bodies.Release(int64(len(body)))
	// One job on the CPU gate computes everything the page needs: the
	// sniffed type, the digest and, for a page that is allowed and
	// changed, its links.
	var (
		digest       id.ID
		refused      bool // the sniffed type is not allowed
		links, fresh []string
		reqs         []string // the requisites among links
		unchanged    bool
	)
	if err := c.cfg.CPU.Do(ctx, func() {
		if !redirect && !failed && ct == "" {
			ct = http.DetectContentType(body)
			if refused = !c.typeAllowed(ct); refused {
				return
			}
		}
		digest = id.Sum(body)
		if unchanged = hasState && digest == st.Digest && st.LastStatus() == code; unchanged {
			return
		}
		switch {
		case failed: // an error page's links are not followed
		case redirect:
			if loc := resp.Header.Get("Location"); loc != "" {
				links = c.inScope(ExtractLocation(u, loc))
			}
		default:
			links, reqs = c.pageLinks(u, ct, body)
		}
		fresh = newLinks(links, st.Outlinks)
	}); err != nil {
		return false
	}
	if refused {
		c.count(KindContentType, raw, fmt.Errorf("sniffed content type %q", ct))
		return c.recordUnkept(ctx, raw, resp, now, truncatedType, st, hasState)
	}
	next := archive.CrawlState{
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		Status:       code,
		Digest:       digest,
		Outlinks:     st.Outlinks,
		Checked:      now,
	}
	if unchanged {
		// The server answered a conditional GET with the same bytes.
		if err := c.a.SetState(ctx, raw, next); err != nil {
			return c.archiveErr(ctx, raw, err)
		}
		c.mu.Lock()
		c.st.unchanged++
		c.mu.Unlock()
		return true
	}

	// The links travel before the version is stored: Put waits for its
	// index group's sync, and the crawl's frontier need not. If Put then
	// fails, the state keeps the old outlinks, so the next visit forwards
	// the links again; their owners' seen tests absorb the repeat.
	var fwdErr error
	if len(fresh) > 0 {
		if fwdErr = c.forward(ctx, fresh, reqs); fwdErr != nil && ctx.Err() != nil {
			return false
		}
		if fwdErr == nil {
			c.mu.Lock()
			c.st.forwarded += int64(len(fresh))
			c.mu.Unlock()
		}
	}

	// The crawl state travels with the version (one index write).
	next.Outlinks = links
	if fwdErr != nil {
		// Keep the old state (digest, validators, outlinks): the next
		// visit sees a change again and forwards the links then.
		next = st
		next.Checked = now
	}
	capture := archive.Capture{URL: raw, Time: now, Status: code, Header: resp.Header, Body: body, Digest: digest, State: &next}
	_, added, err := c.a.Put(ctx, capture)
	if err != nil {
		return c.archiveErr(ctx, raw, err)
	}
	if fwdErr != nil {
		c.count(KindForward, raw, fwdErr)
		return true
	}
	c.countStored(added)
	return true
}

// clientFor returns the client that must send req, or nil when the
// crawler's own connections do: a crawler given a Config.Client uses it for
// everything, and a request that the environment sends through a proxy
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) goes through the default client,
// which speaks to proxies.
func (c *Crawler) clientFor(req *http.Request) *http.Client {
	if c.ownClient {
		return c.cfg.Client
	}
	if p, err := http.ProxyFromEnvironment(req); err != nil || p != nil {
		return c.cfg.Client
	}
	return nil
}

func (c *Crawler) archiveErr(ctx context.Context, raw string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	kind := KindArchive
	if errors.Is(err, archive.ErrQuota) {
		kind = KindQuota
	}
	c.count(kind, raw, err)
	return true
}

// drain reads a little of an unwanted body so that the connection can be
// reused; a longer body is cut off with the connection.
func drain(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
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

// presize is the largest Content-Length readBody allocates for before the
// bytes arrive: a server that announces MaxBody and trickles would
// otherwise make every fetch in flight hold MaxBody.
const presize = 1 << 20

// readBody reads a response body of at most max bytes (one more tells the
// caller it was over). With a Content-Length of at most max and presize it
// reads into one buffer of that size instead of growing one as io.ReadAll
// does; a body shorter than its Content-Length is io.ErrUnexpectedEOF.
func readBody(r io.Reader, contentLength, max int64) ([]byte, error) {
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
func (c *Crawler) state(ctx context.Context, raw string) (archive.CrawlState, error) {
	st, err := c.a.State(ctx, raw)
	if !errors.Is(err, archive.ErrNotFound) {
		return st, err
	}
	vs, ok := c.a.(VersionStater)
	if !ok {
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
// archive compares status and the empty payload). It returns false only
// when ctx was cancelled.
func (c *Crawler) recordUnkept(ctx context.Context, raw string, resp *http.Response, now time.Time, reason string, st archive.CrawlState, hasState bool) bool {
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
	capture := archive.Capture{URL: raw, Time: now, Status: resp.StatusCode, Header: resp.Header,
		Digest: next.Digest, Truncated: reason, State: &next}
	_, added, err := c.a.Put(ctx, capture)
	if err != nil {
		return c.archiveErr(ctx, raw, err)
	}
	c.countStored(added)
	return true
}

// countStored counts a Put: a new version, or an answer equal to the newest.
func (c *Crawler) countStored(added bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if added {
		c.st.newVersions++
	} else {
		c.st.unchanged++
	}
}
