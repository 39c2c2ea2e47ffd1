package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// RobotsSource supplies the robots.txt of an origin. The default,
// HTTPRobots, fetches it from the origin. A node that wants the ring to
// fetch each robots.txt once a day implements RobotsSource by asking the
// node that owns the canonical URL origin+"/robots.txt"; that node answers
// from its own crawler's cache through Crawler.RobotsRecord.
type RobotsSource interface {
	// Robots returns the robots.txt record of origin ("http://host[:port]",
	// canonical). An error means no record could be obtained; the crawler
	// then treats the origin as unreachable (everything disallowed) and
	// asks again after RobotsTTL/24.
	Robots(ctx context.Context, origin string) (RobotsRecord, error)
}

// HTTPRobots fetches robots.txt files from their origin servers.
type HTTPRobots struct {
	Client    *http.Client // must not follow redirects; HTTPRobots follows up to 5 itself
	UserAgent string
	From      string
	Budget    HostBudget // paces the robots.txt request like any other; may be nil
	Clock     func() time.Time

	slots chan struct{} // the crawler's connection slots, when it owns this source
}

var _ RobotsSource = (*HTTPRobots)(nil)

// maxRobotsRedirects is how many redirects RFC 9309 asks crawlers to follow.
const maxRobotsRedirects = 5

// Robots implements RobotsSource. It follows up to 5 redirects. Network
// failures are not errors: they give a record with Status 0 (unreachable),
// which disallows everything. More redirects than that mean, as RFC 9309
// says, that the file is unavailable: the record gets Status 404 (allow
// all). Only a cancelled ctx, a malformed origin or a connection refused
// because the origin, or a redirect's target, resolved to an internal
// address (an error wrapping ErrInternalAddress: nothing is fetched, and
// the origin's URLs are counted as KindInternal) return an error.
func (h *HTTPRobots) Robots(ctx context.Context, origin string) (RobotsRecord, error) {
	now := time.Now
	if h.Clock != nil {
		now = h.Clock
	}
	target, err := url.Parse(origin + "/robots.txt")
	if err != nil {
		return RobotsRecord{}, fmt.Errorf("crawl robots %s: %w", origin, err)
	}
	for range maxRobotsRedirects + 1 {
		if h.Budget != nil {
			if err := h.Budget.Wait(ctx, target.Host, 0); err != nil {
				return RobotsRecord{}, fmt.Errorf("crawl robots %s: %w", origin, err)
			}
		}
		if h.slots != nil {
			if !acquire(ctx, h.slots) {
				return RobotsRecord{}, fmt.Errorf("crawl robots %s: %w", origin, ctx.Err())
			}
		}
		rec, next, err := h.fetchOnce(ctx, target)
		if h.slots != nil {
			<-h.slots
		}
		if err != nil {
			if ctx.Err() != nil {
				return RobotsRecord{}, fmt.Errorf("crawl robots %s: %w", origin, ctx.Err())
			}
			if errors.Is(err, ErrInternalAddress) {
				return RobotsRecord{}, fmt.Errorf("crawl robots %s: %w", origin, err)
			}
			return RobotsRecord{Status: 0, Fetched: now()}, nil
		}
		if next == nil {
			rec.Fetched = now()
			return rec, nil
		}
		target = next
	}
	return RobotsRecord{Status: http.StatusNotFound, Fetched: now()}, nil
}

// fetchOnce sends one request; next is the redirect target, if any.
func (h *HTTPRobots) fetchOnce(ctx context.Context, target *url.URL) (RobotsRecord, *url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return RobotsRecord{}, nil, err
	}
	setIdentity(req, h.UserAgent, h.From)
	resp, err := h.Client.Do(req)
	if err != nil {
		return RobotsRecord{}, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc, err := resp.Location()
		if err != nil {
			// A redirect without a target: the file is unavailable.
			return RobotsRecord{Status: http.StatusNotFound}, nil, nil
		}
		return RobotsRecord{}, loc, nil
	}
	rec := RobotsRecord{Status: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		rec.Body, err = io.ReadAll(io.LimitReader(resp.Body, RobotsMaxBytes))
		if err != nil {
			return RobotsRecord{}, nil, err
		}
	}
	return rec, nil, nil
}

func setIdentity(req *http.Request, ua, from string) {
	if ua == "" {
		ua = DefaultUserAgent
	}
	req.Header.Set("User-Agent", ua)
	if from != "" {
		req.Header.Set("From", from)
	}
}

// robotsCache holds the parsed robots.txt of each origin for RobotsTTL and
// makes concurrent askers for one origin share one fetch. It holds at
// most maxRobotsEntries origins and maxRobotsBytes of their files: past
// either, a new origin first evicts the expired entries, then others
// (roomLocked), so neither the origins a crawl meets over the days nor
// those members ask about (the ring's robots protocol) grow it without
// bound.
type robotsCache struct {
	src   RobotsSource
	agent string
	ttl   time.Duration
	clock func() time.Time

	mu      sync.Mutex
	entries map[string]*robotsEntry
	bytes   int64 // of the files held (robotsEntry.size)
}

// Bounds of a robotsCache; robotsEntryCost is what an entry counts
// besides its file (the parsed rules, the map entry).
const (
	robotsEntryCost  = 512
	maxRobotsEntries = 50_000
	maxRobotsBytes   = 64 << 20
)

type robotsEntry struct {
	ready     chan struct{} // closed when rec and rules are set
	rec       RobotsRecord
	rules     *Robots
	err       error
	cancelled bool // err came from the fetching asker's ctx ending
	expires   time.Time
	size      int64 // counted in robotsCache.bytes once filled
}

// roomLocked makes room for one more entry: it drops expired entries,
// then, while the cache is still over a bound, entries in the map's
// order (a fetch under way stays). The caller holds c.mu.
func (c *robotsCache) roomLocked(now time.Time) {
	if len(c.entries) < maxRobotsEntries && c.bytes <= maxRobotsBytes {
		return
	}
	for _, pass := range []bool{true, false} {
		for o, e := range c.entries {
			if len(c.entries) < maxRobotsEntries && c.bytes <= maxRobotsBytes {
				return
			}
			select {
			case <-e.ready:
			default:
				continue // being fetched
			}
			if pass && now.Before(e.expires) {
				continue // the first pass drops only expired entries
			}
			c.deleteLocked(o, e)
		}
	}
}

// deleteLocked drops origin's entry e. The caller holds c.mu.
func (c *robotsCache) deleteLocked(origin string, e *robotsEntry) {
	delete(c.entries, origin)
	c.bytes -= e.size
	e.size = 0
}

func newRobotsCache(src RobotsSource, agent string, ttl time.Duration, clock func() time.Time) *robotsCache {
	return &robotsCache{src: src, agent: agent, ttl: ttl, clock: clock, entries: make(map[string]*robotsEntry)}
}

// errTTL is how long a failed robots.txt (5xx, unreachable, source error)
// is trusted before it is asked again.
func (c *robotsCache) errTTL() time.Duration { return c.ttl / 24 }

// get returns the entry of origin, fetching it when absent or expired.
// The entry's err is the source's error (its rules then disallow
// everything). get's own error is ctx's. When the asker whose ctx drove
// the fetch went away mid-fetch, the others fetch again rather than take
// its cancellation for the site's answer.
func (c *robotsCache) get(ctx context.Context, origin string) (*robotsEntry, error) {
	for {
		e, err := c.getOnce(ctx, origin)
		if err != nil {
			return nil, err
		}
		if e.err == nil || !e.cancelled || ctx.Err() != nil {
			return e, nil
		}
		c.mu.Lock()
		if c.entries[origin] == e {
			c.deleteLocked(origin, e)
		}
		c.mu.Unlock()
	}
}

func (c *robotsCache) getOnce(ctx context.Context, origin string) (*robotsEntry, error) {
	now := c.clock()
	c.mu.Lock()
	e, ok := c.entries[origin]
	if ok {
		select {
		case <-e.ready:
			if now.Before(e.expires) {
				c.mu.Unlock()
				return e, nil
			}
			ok = false
		default: // a fetch is in progress: wait for it below
		}
	}
	if !ok {
		if old := c.entries[origin]; old != nil {
			c.deleteLocked(origin, old) // expired
		}
		c.roomLocked(now)
		e = &robotsEntry{ready: make(chan struct{})}
		c.entries[origin] = e
		c.mu.Unlock()
		c.fill(ctx, origin, e)
		c.mu.Lock()
		if c.entries[origin] == e {
			e.size = int64(len(e.rec.Body)) + robotsEntryCost
			c.bytes += e.size
		}
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *robotsCache) fill(ctx context.Context, origin string, e *robotsEntry) {
	defer close(e.ready)
	rec, err := c.src.Robots(ctx, origin)
	if err != nil {
		e.err = err
		e.rec = RobotsRecord{Status: 0, Fetched: c.clock()}
	} else {
		e.rec = rec
	}
	e.rules = ParseRobots(e.rec, c.agent)
	ttl := c.ttl
	if s := e.rec.Status; err != nil || s == 0 || s == 429 || s >= 500 {
		ttl = c.errTTL()
	}
	if err != nil && ctx.Err() != nil {
		e.cancelled = true
		ttl = 0 // cancelled, not failed: ask again next time
	}
	fetched := e.rec.Fetched
	if fetched.IsZero() {
		fetched = c.clock()
	}
	e.expires = fetched.Add(ttl)
}

// record returns the cached record of origin, fetching it if needed. It is
// what a node serves to the other nodes of the ring.
func (c *robotsCache) record(ctx context.Context, origin string) (RobotsRecord, error) {
	e, err := c.get(ctx, origin)
	if err != nil {
		return RobotsRecord{}, err
	}
	if e.err != nil {
		return RobotsRecord{}, e.err
	}
	return e.rec, nil
}

// errNoRobots is returned by Crawler.RobotsRecord for a malformed origin.
var errNoRobots = errors.New("crawl: malformed robots.txt origin")
