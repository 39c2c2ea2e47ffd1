package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/replication"
)

// Holders. A signature proves who made a capture, not that the site
// served it, and a version younger than 48 h is shown without witnesses:
// a member could sign a made-up capture of any URL, dated now, and list
// it. So another member's row or export record of URL u is believed only
// when that member is one of u's k holders (its owner and the next k-1
// real nodes clockwise) in this node's view of the ring, or when a holder,
// or this node, lists the same version too. The rest are dropped and
// counted (Service.NotHeld).
//
// The view is the ring's Successors: answered from this node's successor
// lists when they cover the key (the usual case), else by a lookup. One
// answer serves every key up to its owner's virtual server (all the keys
// of that owner's range from the one asked on), so a query asks about
// as many owners as its URLs fall in, not once per URL. A lookup that
// fails, without naming the member among the holders it did find, fails
// the query as a member that does not answer does (ErrPartial): an honest
// row is never dropped silently for want of an answer.

// holderView resolves the holders of URL keys for one query, caching
// each answer for its owner's range. Safe for concurrent use.
type holderView struct {
	svc   *Service
	k     int
	mu    sync.Mutex
	spans []holderSpan // sorted by owner (to)
	// notHeld counts an export's records of members not holding their
	// URL (heldVerifier).
	notHeld atomic.Int64
}

// holderSpan holds the answer of one lookup: the keys [from, to] are
// owned by the virtual server to, and held by peers (the first of which
// owns them). err is the lookup's error when the list may be short.
type holderSpan struct {
	from, to id.ID
	peers    []string
	err      error
}

// holderView returns a view of the ring's holders for one query.
func (svc *Service) holderView() *holderView {
	k := svc.Replicas
	if k <= 0 {
		k = replication.Factor
	}
	return &holderView{svc: svc, k: k}
}

// errNoRing is the error of a holder lookup by a Service without a ring.
var errNoRing = errors.New("node: no ring to find holders")

// holds reports whether peer is one of key's holders. When it cannot
// tell (the lookup failed before finding peer), it returns false and
// the lookup's error.
func (h *holderView) holds(ctx context.Context, peer string, key id.ID) (bool, error) {
	s, err := h.span(ctx, key)
	if err != nil {
		return false, err
	}
	if slices.Contains(s.peers, peer) {
		return true, nil
	}
	return false, s.err
}

// span returns a copy of the cached answer covering key, looking it up
// if none does. A copy: another goroutine's insertion may shift the
// cache's entries once the lock is released.
func (h *holderView) span(ctx context.Context, key id.ID) (holderSpan, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, found := h.find(key)
	if found {
		return h.spans[i], nil
	}
	if h.svc.Ring == nil {
		return holderSpan{}, errNoRing
	}
	nodes, err := h.svc.Ring.Successors(ctx, key, h.k)
	if len(nodes) == 0 {
		if err == nil {
			err = errors.New("no owner")
		}
		return holderSpan{}, fmt.Errorf("holders of %s: %w", key.Short(), err)
	}
	s := holderSpan{from: key, to: nodes[0].ID}
	for _, n := range nodes {
		if !slices.Contains(s.peers, n.Peer) {
			s.peers = append(s.peers, n.Peer)
		}
	}
	if err != nil {
		s.err = fmt.Errorf("holders of %s: %w", key.Short(), err)
	}
	at, same := slices.BinarySearchFunc(h.spans, s.to, func(x holderSpan, to id.ID) int { return x.to.Cmp(to) })
	if same {
		// The same owner, from a key before the range's part seen so far.
		h.spans[at].from = key
		return h.spans[at], nil
	}
	h.spans = slices.Insert(h.spans, at, s)
	return s, nil
}

// find returns the index of the span covering key. Caller holds mu.
func (h *holderView) find(key id.ID) (int, bool) {
	if len(h.spans) == 0 {
		return 0, false
	}
	i, _ := slices.BinarySearchFunc(h.spans, key, func(x holderSpan, k id.ID) int { return x.to.Cmp(k) })
	if i == len(h.spans) {
		i = 0 // past the last owner: the first one's range wraps around
	}
	s := &h.spans[i]
	return i, key == s.from || (s.from != s.to && id.InHalfOpen(key, s.from, s.to))
}

// NotHeld returns how many rows and export records of other members were
// left out because the member is not one of their URL's holders: rows
// no holder (nor this node) listed, and export records (the same
// version from a holder is still exported).
func (svc *Service) NotHeld() int64 { return svc.notHeld.Load() }
