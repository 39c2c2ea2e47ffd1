package gateway

import (
	"context"
	"io"
	"net/http"
	"sync"

	"golang.org/x/time/rate"
)

// Per-client limits of the research endpoints (/export, /cdx): a client
// (clientKey) has at most Limits.ClientSlots of them in flight, and its
// exports together receive at most Limits.ExportRate bytes per second,
// so one researcher cannot take a home node's whole uplink. All clients'
// exports together are bounded by Limits.MaxExports.

// clientLimits holds the state of the clients with requests in flight.
type clientLimits struct {
	slots int   // <= 0: no limit
	rate  int64 // bytes/s; <= 0: no limit
	mu    sync.Mutex
	m     map[string]*client
}

// client is one client's share.
type client struct {
	busy int           // requests in flight
	lim  *rate.Limiter // export bytes; nil: no limit
}

func newClientLimits(slots int, bps int64) *clientLimits {
	return &clientLimits{slots: slots, rate: bps, m: make(map[string]*client)}
}

// enter takes one of key's slots, or reports false when it has none. The
// client's entry lives while it has requests in flight.
func (c *clientLimits) enter(key string) (*client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.m[key]
	if cl == nil {
		cl = &client{}
		if c.rate > 0 {
			cl.lim = rate.NewLimiter(rate.Limit(c.rate), int(max(c.rate, exportBuffer)))
		}
		c.m[key] = cl
	}
	if c.slots > 0 && cl.busy >= c.slots {
		return nil, false
	}
	cl.busy++
	return cl, true
}

// leave gives back a slot of key.
func (c *clientLimits) leave(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.m[key]; cl != nil {
		if cl.busy--; cl.busy <= 0 {
			delete(c.m, key)
		}
	}
}

// clientSlot runs serve in one of the client's slots, or answers 503.
func (s *Server) clientSlot(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request, *client)) {
	key := clientKey(r)
	cl, ok := s.clients.enter(key)
	if !ok {
		s.busy(w, r, "too many requests of this client in flight")
		return
	}
	defer s.clients.leave(key)
	serve(w, r, cl)
}

// throttled is a writer that waits for the client's rate before each
// piece it passes on.
type throttled struct {
	ctx context.Context
	w   io.Writer
	lim *rate.Limiter
}

// throttle returns w limited to cl's export rate.
func throttle(ctx context.Context, w io.Writer, cl *client) io.Writer {
	if cl == nil || cl.lim == nil {
		return w
	}
	return &throttled{ctx: ctx, w: w, lim: cl.lim}
}

func (t *throttled) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), t.lim.Burst())
		if err := t.lim.WaitN(t.ctx, k); err != nil {
			return n, err
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
