package gateway

import "sync"

// Size hints: the size of a capture is known only once Archive.Get has
// returned it, so every Get takes a fetch slot (Limits.MaxFetches), and
// a few large ones would hold up every small page behind them. The
// gateway remembers the body size each URL had last; a URL last seen
// small takes one of the more numerous small fetch slots instead. A URL
// never seen, or seen large, takes a fetch slot; a hinted URL whose
// capture has grown is charged when it returns (the memory not charged
// meanwhile is bounded by the small slots times the largest capture) and
// is remembered large.

// smallBody is the largest body size hinted small.
const smallBody = 1 << 20

// maxHints bounds the URLs remembered.
const maxHints = 10000

// smallSlotsPerFetch is the number of small fetch slots per
// Limits.MaxFetches.
const smallSlotsPerFetch = 4

// sizeHints remembers the body size of recent URLs.
type sizeHints struct {
	mu sync.Mutex
	m  map[string]int64
}

// small reports whether url's body was small when last read.
func (h *sizeHints) small(url string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.m[url]
	return ok && n <= smallBody
}

// note remembers url's body size n.
func (h *sizeHints) note(url string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]int64)
	}
	if _, ok := h.m[url]; !ok && len(h.m) >= maxHints {
		for k := range h.m { // any one: map order is unspecified
			delete(h.m, k)
			break
		}
	}
	h.m[url] = n
}
