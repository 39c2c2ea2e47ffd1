package gateway

import (
	"container/list"
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Per-client limits (a client is a remote address, clientKey): every
// request not from the node's own machine draws on the client's request
// bucket (Limits.RequestRate, RequestBurst) and is answered 429 with
// Retry-After when it is empty; the research endpoints (/export, /cdx)
// take one of the client's Limits.ClientSlots; the bytes of its exports
// and CDX answers, all together, are paced to Limits.ExportRate. All
// clients' exports together are bounded by Limits.MaxExports.
//
// The table of clients is bounded: a client with requests in flight is
// always kept (at most MaxInFlight of them), idle ones are remembered,
// least recently seen first out, up to Limits.MaxClients. A flood of
// addresses thus costs at most MaxClients entries (a few hundred bytes
// each); an address pushed out starts again with full buckets.

// clientLimits holds the clients' state.
type clientLimits struct {
	slots    int        // <= 0: no limit
	bytes    rate.Limit // export bytes/s; 0: no limit
	reqs     rate.Limit // requests/s; 0: no limit
	reqBurst int
	max      int // idle clients remembered
	now      func() time.Time

	mu   sync.Mutex
	m    map[string]*client
	idle list.List // of *client with busy == 0, least recently seen first

	limited, evicted atomic.Int64
	paced            atomic.Int64 // nanoseconds writers waited for the byte rate
}

// client is one client's share.
type client struct {
	key  string
	busy int           // requests in flight
	lim  *rate.Limiter // export bytes; nil: no limit
	req  *rate.Limiter // requests; nil: no limit
	at   *list.Element // in idle, when busy == 0
	c    *clientLimits
}

func newClientLimits(l Limits) *clientLimits {
	c := &clientLimits{slots: l.ClientSlots, reqBurst: l.RequestBurst, max: l.MaxClients, now: time.Now, m: make(map[string]*client)}
	if l.ExportRate > 0 {
		c.bytes = rate.Limit(l.ExportRate)
	}
	if l.RequestRate > 0 {
		c.reqs = rate.Limit(l.RequestRate)
	}
	return c
}

// exportBurst is the byte bucket of a client: a tenth of a second of its
// rate, at least exportBuffer, so an export's measured rate exceeds the
// cap by at most burst/duration.
func exportBurst(bps rate.Limit) int {
	return int(max(float64(exportBuffer), float64(bps)/10))
}

// get returns key's entry, made if new, taken off the idle list. c.mu
// must be held.
func (c *clientLimits) get(key string) *client {
	cl := c.m[key]
	if cl == nil {
		cl = &client{key: key, c: c}
		if c.bytes > 0 {
			cl.lim = rate.NewLimiter(c.bytes, exportBurst(c.bytes))
		}
		if c.reqs > 0 {
			cl.req = rate.NewLimiter(c.reqs, c.reqBurst)
		}
		c.m[key] = cl
		return cl
	}
	if cl.at != nil {
		c.idle.Remove(cl.at)
		cl.at = nil
	}
	return cl
}

// put files cl as idle again when it has nothing in flight, and forgets
// the least recently seen idle clients past max. c.mu must be held.
func (c *clientLimits) put(cl *client) {
	if cl.busy > 0 {
		return
	}
	cl.at = c.idle.PushBack(cl)
	for len(c.m) > c.max && c.idle.Len() > 0 {
		old := c.idle.Remove(c.idle.Front()).(*client)
		old.at = nil
		delete(c.m, old.key)
		c.evicted.Add(1)
	}
}

// allow takes one request from key's bucket; when it is empty it reports
// false and how long until it holds one.
func (c *clientLimits) allow(key string) (bool, time.Duration) {
	if c.reqs == 0 {
		return true, 0
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.get(key)
	defer c.put(cl)
	r := cl.req.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		c.limited.Add(1)
		return false, d
	}
	return true, 0
}

// enter takes one of key's slots, or reports false when it has none.
func (c *clientLimits) enter(key string) (*client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.get(key)
	if c.slots > 0 && cl.busy >= c.slots {
		c.put(cl)
		return nil, false
	}
	cl.busy++
	return cl, true
}

// leave gives back a slot of cl.
func (c *clientLimits) leave(cl *client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl.busy--
	c.put(cl)
}

// size returns the number of clients remembered.
func (c *clientLimits) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// tooMany answers a request past its client's request rate: 429 with
// Retry-After (whole seconds, rounded up), a short text.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	writeBody(w, r, http.StatusTooManyRequests, []byte("gateway: too many requests from this address, try again later\n"))
}

// clientSlot runs serve in one of the client's slots, or answers 503.
func (s *Server) clientSlot(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request, *client)) {
	cl, ok := s.clients.enter(clientKey(r))
	if !ok {
		s.busy(w, r, "too many requests of this client in flight")
		return
	}
	defer s.clients.leave(cl)
	serve(w, r, cl)
}

// throttled is a writer that waits for the client's rate before each
// piece it passes on.
type throttled struct {
	ctx context.Context
	w   io.Writer
	cl  *client
}

// throttle returns w limited to cl's export rate.
func throttle(ctx context.Context, w io.Writer, cl *client) io.Writer {
	if cl == nil || cl.lim == nil {
		return w
	}
	return &throttled{ctx: ctx, w: w, cl: cl}
}

func (t *throttled) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), t.cl.lim.Burst())
		r := t.cl.lim.ReserveN(time.Now(), k) // k <= burst: always OK
		if d := r.Delay(); d > 0 {
			tm := time.NewTimer(d)
			select {
			case <-tm.C:
			case <-t.ctx.Done():
				tm.Stop()
				r.Cancel()
				return n, t.ctx.Err()
			}
			t.cl.c.paced.Add(int64(d))
		}
		m, err := t.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// pacedWriter is a ResponseWriter whose body is paced to a client's
// export rate (the CDX's answers).
type pacedWriter struct {
	http.ResponseWriter
	w io.Writer
}

func (p *pacedWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// Unwrap returns the underlying writer, for http.ResponseController.
func (p *pacedWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// paced returns w with its body paced to cl's export rate.
func paced(r *http.Request, w http.ResponseWriter, cl *client) http.ResponseWriter {
	if cl == nil || cl.lim == nil {
		return w
	}
	return &pacedWriter{ResponseWriter: w, w: throttle(r.Context(), w, cl)}
}
