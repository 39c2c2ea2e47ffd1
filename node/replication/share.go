package replication

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/replicate"
)

// maxRefusedShare bounds the records remembered as refused for their
// signer's share of the quota (45 bytes each): past it the set starts
// over, and a record is read once more before it is remembered again.
const maxRefusedShare = 100_000

// refusedSet remembers the records the local store refused because their
// signer or their range took its share of the quota
// (archive.ErrSignerShare, archive.ErrRangeShare), so that
// rounds and offers do not download them again and again: one member's
// junk costs its replicas one download, not one per round.
type refusedSet struct {
	mu sync.Mutex
	m  map[archive.Entry]struct{}
}

func (s *refusedSet) has(e archive.Entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[e]
	return ok
}

func (s *refusedSet) add(e archive.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxRefusedShare {
		s.m = make(map[archive.Entry]struct{})
	}
	s.m[e] = struct{}{}
}

func (s *refusedSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// syncOptions are the options of every sync and copy: skip what the store
// refused for its signer's share, and remember what it refuses.
func (r *Replicator) syncOptions() replicate.Options {
	return replicate.Options{Skip: r.refused.has, Refused: r.refused.add}
}

// rangeTTL is how long a replicated range is remembered after the last
// pull request or offer that named it: rounds and pushes name each range
// far more often, and a range no longer named is no longer this node's
// to replicate.
const rangeTTL = time.Hour

// maxRanges bounds the replicated ranges remembered (k-1 per virtual
// server of each predecessor, in practice a few dozen).
const maxRanges = 1024

// replicatedRanges is the ranges this node replicates for other owners:
// for each owner virtual server B, the range (A, B] its last verified
// pull request or offer named, and when.
type replicatedRanges struct {
	apply sync.Mutex // held while a set is told: in the order noted
	mu    sync.Mutex
	m     map[id.ID]rangeSeen
}

type rangeSeen struct {
	a    id.ID
	seen time.Time
}

// note records (a, b] at now, dropping ranges not named for rangeTTL, and
// returns the ranges and whether they changed.
func (rr *replicatedRanges) note(a, b id.ID, now time.Time) ([]archive.KeyRange, bool) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.m == nil {
		rr.m = map[id.ID]rangeSeen{}
	}
	old, had := rr.m[b]
	changed := !had || old.a != a
	rr.m[b] = rangeSeen{a: a, seen: now}
	for k, v := range rr.m {
		if now.Sub(v.seen) > rangeTTL || (len(rr.m) > maxRanges && k != b) {
			delete(rr.m, k)
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	bs := slices.SortedFunc(maps.Keys(rr.m), func(x, y id.ID) int { return x.Cmp(y) })
	out := make([]archive.KeyRange, len(bs))
	for i, k := range bs {
		out[i] = archive.KeyRange{A: rr.m[k].a, B: k}
	}
	return out, true
}

// noteRange records that this node replicates (a, b] for its owner b,
// verified, and tells the store when the set of ranges changed.
func (r *Replicator) noteRange(a, b id.ID) {
	if r.cfg.SetRanges == nil {
		return
	}
	r.ranges.apply.Lock()
	defer r.ranges.apply.Unlock()
	rs, changed := r.ranges.note(a, b, time.Now())
	if !changed {
		return
	}
	if err := r.cfg.SetRanges(rs); err != nil {
		r.log.Warn("replication: set the ranges' shares", "ranges", len(rs), "err", err)
	}
}
