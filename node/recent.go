package node

import (
	"context"
	"sync"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
)

// The captures this node's crawler has just stored, kept for the search
// indexer: it reads every new version back from the store about a
// second after the Put (node/search's batches), and that read, a record's
// decompression and decoding, was about a third of the indexer's CPU. A
// capture is kept from its Put until the indexer's read takes it, within
// a byte budget (the oldest go first); a version the indexer asks for
// that is not kept (evicted, imported, a backfill's) is read from the
// store as before.

// recentBudget bounds the payload bytes kept: at 700 pages a second of
// 20 KB, about half a second of a crawl at full speed, which is what the
// indexer's batch of 256 URLs waits at that pace.
const recentBudget = 8 << 20

// recentMax bounds the captures kept, whatever their size.
const recentMax = 1024

// recentKey names a stored record: its segment and offset.
type recentKey struct {
	file   string
	offset int64
}

// recentCaptures is the bounded set of captures just stored. It is safe
// for concurrent use.
type recentCaptures struct {
	mu    sync.Mutex
	m     map[recentKey]*archive.Capture
	order []recentKey // insertion order; keys taken early are skipped
	bytes int
	hits  int64
}

func newRecentCaptures() *recentCaptures {
	return &recentCaptures{m: make(map[recentKey]*archive.Capture)}
}

// keep holds c as the capture of v, the version its Put just added,
// when v's record holds c's payload as it is (not truncated, the same
// digest and length), evicting the oldest captures over the budget.
func (r *recentCaptures) keep(v archive.Version, c *archive.Capture) {
	if c.Truncated != "" || int64(len(c.Body)) != v.Length || (!c.Digest.IsZero() && c.Digest != v.Digest) ||
		len(c.Body) > recentBudget/4 {
		return
	}
	kept := &archive.Capture{URL: v.URL, Time: v.Time, Status: c.Status, Header: c.Header.Clone(), Body: c.Body,
		Digest: v.Digest, Peer: v.Peer, Browser: v.Browser}
	k := recentKey{v.File, v.Offset}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.m[k]; ok {
		r.bytes -= len(old.Body)
	} else {
		r.order = append(r.order, k)
	}
	r.m[k] = kept
	r.bytes += len(kept.Body)
	for (r.bytes > recentBudget || len(r.m) > recentMax) && len(r.order) > 0 {
		old := r.order[0]
		r.order = r.order[1:]
		if c, ok := r.m[old]; ok {
			r.bytes -= len(c.Body)
			delete(r.m, old)
		}
	}
	if len(r.order) > 2*recentMax {
		r.compactLocked()
	}
}

// compactLocked drops the keys of taken captures from the order.
func (r *recentCaptures) compactLocked() {
	live := r.order[:0]
	for _, k := range r.order {
		if _, ok := r.m[k]; ok {
			live = append(live, k)
		}
	}
	r.order = live
}

// take returns and forgets the capture kept for v, if any.
func (r *recentCaptures) take(v archive.Version) (*archive.Capture, bool) {
	k := recentKey{v.File, v.Offset}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.m[k]
	if !ok || c.URL != v.URL || c.Digest != v.Digest {
		return nil, false
	}
	delete(r.m, k)
	r.bytes -= len(c.Body)
	r.hits++
	return c, true
}

// keepingStore is the store as the crawler writes to it: each version a
// Put adds is kept in recent for the search indexer. The store's other
// methods, those the crawler looks for on its Archive included, are the
// store's own.
type keepingStore struct {
	*archive.Store
	recent *recentCaptures
}

var _ crawl.Archive = keepingStore{}

// Put implements crawl.Archive.
func (s keepingStore) Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error) {
	v, added, err := s.Store.Put(ctx, c)
	if err == nil && added {
		s.recent.keep(v, &c)
	}
	return v, added, err
}

// recentReader is the store as the search indexer reads it: a version
// the crawler just stored comes from recent, without a read of its
// record.
type recentReader struct {
	*archive.Store
	recent *recentCaptures
}

// Read returns the capture of v.
func (s recentReader) Read(ctx context.Context, v archive.Version) (*archive.Capture, error) {
	if c, ok := s.recent.take(v); ok {
		return c, nil
	}
	return s.Store.Read(ctx, v)
}
