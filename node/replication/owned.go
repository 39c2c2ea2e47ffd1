package replication

import (
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Ownership: since when this node has owned a key without a break, as it
// saw its ranges change while it ran. A capture of a key made while this
// node owned it and was up was this node's to make: another node's
// capture of that time is no take-over (rounds hold it, guard.go). The
// history lives in memory: after a restart every key is owned "since
// the start", so what others fetched while this node was down is
// imported as before.

// maxOwnedSpans bounds the history kept per virtual server; the oldest
// change is forgotten first, which only makes keys look owned since
// later (their captures then pass as take-overs).
const maxOwnedSpans = 64

// ownedSpan is one state of a virtual server's range: from since, its
// range was (start, vnode] (until the next span's since).
type ownedSpan struct {
	since time.Time
	start id.ID
}

// ownedRanges is the history of the local virtual servers' ranges. Safe
// for concurrent use.
type ownedRanges struct {
	now func() time.Time // the clock of observations; nil means time.Now (tests set it)
	mu  sync.Mutex
	vs  map[id.ID][]ownedSpan // by virtual server id, oldest first
}

// clock returns the time of an observation.
func (o *ownedRanges) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// observe records that at now the range of virtual server v is g. An
// unknown range (its predecessor unknown for a moment) changes nothing:
// the keys of its last known range stay owned.
func (o *ownedRanges) observe(v id.ID, g ring.Range, now time.Time) {
	if !g.Known {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.vs == nil {
		o.vs = map[id.ID][]ownedSpan{}
	}
	h := o.vs[v]
	if n := len(h); n > 0 && h[n-1].start == g.Start {
		return
	}
	if len(h) >= maxOwnedSpans {
		h = append(h[:0], h[1:]...)
	}
	o.vs[v] = append(h, ownedSpan{since: now, start: g.Start})
}

// observeStatus records the ranges of every local virtual server in st
// and forgets the virtual servers st no longer lists.
func (o *ownedRanges) observeStatus(st ring.Status, now time.Time) {
	live := make(map[id.ID]bool, len(st.Vnodes))
	for _, v := range st.Vnodes {
		live[v.ID] = true
		o.observe(v.ID, v.Range, now)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for v := range o.vs {
		if !live[v] {
			delete(o.vs, v)
		}
	}
}

// since returns the time from which virtual server v's range has held
// key without a break; ok is false when key is not in its range now (or
// v is unknown).
func (o *ownedRanges) since(v, key id.ID) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.vs[v]
	n := len(h)
	if n == 0 || !id.InHalfOpen(key, h[n-1].start, v) {
		return time.Time{}, false
	}
	t := h[n-1].since
	for i := n - 2; i >= 0 && id.InHalfOpen(key, h[i].start, v); i-- {
		t = h[i].since
	}
	return t, true
}
