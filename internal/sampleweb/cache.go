package sampleweb

import "sync"

// cache.go keeps rendered page bodies. A page's body on day d equals its
// body on day lastMod(d), so (host, page, lastMod) names a body for good,
// provided the model is always rendered with the same host bases, which
// holds: a Web renders with the addresses it listens on, a static site
// with none.

// maxCachedBytes bounds the bodies kept; when full the cache starts over.
const maxCachedBytes = 32 << 20

type bodyKey struct{ h, n, lastMod int }

type bodyCache struct {
	off    bool // set before use to render every time (tests)
	mu     sync.Mutex
	bodies map[bodyKey]cachedBody
	bytes  int
}

type cachedBody struct {
	body []byte
	etag string
}

// pageBody returns the rendered body of page state s and its ETag.
func (m *model) pageBody(s *pageState, bases []string) ([]byte, string) {
	k := bodyKey{s.doc.h, s.doc.n, s.lastMod}
	c := &m.bodies
	if c.off {
		b := m.renderPage(s, bases)
		return b, etag(b)
	}
	c.mu.Lock()
	got, ok := c.bodies[k]
	c.mu.Unlock()
	if ok {
		return got.body, got.etag
	}
	got.body = m.renderPage(s, bases)
	got.etag = etag(got.body)
	c.mu.Lock()
	if c.bodies == nil || c.bytes+len(got.body) > maxCachedBytes {
		c.bodies, c.bytes = make(map[bodyKey]cachedBody), 0
	}
	if _, ok := c.bodies[k]; !ok {
		c.bodies[k] = got
		c.bytes += len(got.body)
	}
	c.mu.Unlock()
	return got.body, got.etag
}
