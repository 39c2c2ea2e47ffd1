package gateway

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Many readers of one large page share one reply: the first request of a
// replay prepares it (reads the capture, rewrites it) and spools it; the
// requests for the same replay that arrive while it does, or within
// replyTTL after, wait for it and are served from the same spool file. 40
// readers of a 9 MiB page then cost one rewriting and one file, not 40 of
// each. A reply is shared only when it was spooled (SpoolThreshold bytes
// or more), and never in frameless mode, whose banner is the reader's.

// replyTTL is how long a spooled reply is offered to new requests: a
// newer capture of the URL is seen at most this late.
const replyTTL = 10 * time.Second

// maxReplies bounds the replies offered at once (their files, on disk).
const maxReplies = 64

// replyKey names a replay as prepared for one request: the origins it
// names in headers and script, and the replay address.
type replyKey struct {
	host, ui, path string
}

func keyOf(r *http.Request, ui string) replyKey {
	return replyKey{host: r.Host, ui: ui, path: r.URL.EscapedPath() + "?" + r.URL.RawQuery}
}

// reply is one shared reply. ready is closed when it is prepared; file is
// then nil if it cannot be shared (the waiters prepare their own).
type reply struct {
	ready   chan struct{}
	status  int
	header  http.Header
	file    *os.File
	size    int64
	refs    int // the cache's own, while offered, and each reader's
	expires time.Time
}

// replies is the set of replies offered.
type replies struct {
	mu sync.Mutex
	m  map[replyKey]*reply
}

// join returns the reply of k, and whether the caller is to prepare it
// (then it must call publish). A caller that does not prepare must call
// release once done with a reply whose file is not nil.
func (c *replies) join(k replyKey, now time.Time) (*reply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.m {
		if e.file != nil && now.After(e.expires) {
			delete(c.m, key)
			c.unref(e)
		}
	}
	if e := c.m[k]; e != nil {
		e.refs++
		return e, false
	}
	if len(c.m) >= maxReplies {
		return nil, false
	}
	e := &reply{ready: make(chan struct{}), refs: 2} // the cache's and the preparer's
	c.m[k] = e
	return e, true
}

// publish ends the preparation of e under k: shared when f is not nil
// (its reader then releases e like any other), else withdrawn.
func (c *replies) publish(k replyKey, e *reply, status int, h http.Header, f *os.File, size int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f == nil {
		delete(c.m, k)
		e.refs = 0
	} else {
		e.status, e.header, e.file, e.size, e.expires = status, h, f, size, now.Add(replyTTL)
	}
	close(e.ready)
}

// release drops a reader's reference to e.
func (c *replies) release(e *reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unref(e)
}

func (c *replies) unref(e *reply) {
	if e.refs--; e.refs == 0 && e.file != nil {
		e.file.Close()
	}
}

// serveShared answers r with the shared reply e, which is ready.
func (s *Server) serveShared(w http.ResponseWriter, r *http.Request, e *reply) {
	defer s.replies.release(e)
	h := w.Header()
	for k, vs := range e.header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Length", strconv.FormatInt(e.size, 10))
	w.WriteHeader(e.status)
	s.stats.shared.Add(1)
	_, _ = io.Copy(w, io.NewSectionReader(e.file, 0, e.size))
}

// sharing is a reply being prepared for sharing by one request.
type sharing struct {
	c    *replies
	k    replyKey
	e    *reply
	done bool
}

// publish shares the spooled reply f (see replies.publish).
func (p *sharing) publish(status int, h http.Header, f *os.File, size int64) {
	if p == nil || p.done {
		return
	}
	p.done = true
	p.c.publish(p.k, p.e, status, h, f, size, time.Now())
}

// abandon withdraws a reply that was not shared, so that its waiters
// prepare their own.
func (p *sharing) abandon() { p.publish(0, nil, nil, 0) }

// shareReply looks for the reply of r: it answers r from a shared reply
// and returns true, or returns the sharing r is to prepare (nil when r is
// not to be shared), whose abandon the caller defers.
func (s *Server) shareReply(w http.ResponseWriter, r *http.Request, t Target, ui string, wait <-chan struct{}) (*sharing, bool) {
	if r.Method != http.MethodGet || (s.cfg.Frameless && (t.Mod == "" || t.Mod == ModMain)) || s.lim.SpoolThreshold < 0 {
		return nil, false
	}
	k := keyOf(r, ui)
	e, lead := s.replies.join(k, time.Now())
	if e == nil {
		return nil, false
	}
	if lead {
		return &sharing{c: &s.replies, k: k, e: e}, false
	}
	select {
	case <-e.ready:
	case <-wait:
		s.replies.release(e)
		return nil, false
	}
	if e.file == nil {
		return nil, false
	}
	s.serveShared(w, r, e)
	return nil, true
}
