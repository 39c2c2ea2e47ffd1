package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/ring"
)

// Write acknowledgements (--write-copies): with Config.TrackCopies set,
// the push path remembers, for each record Notify queues, which replicas
// confirmed it (an offer's answer is the moment the replica holds it) and
// which gave up on it (a second failed offer, a full queue), so that
// WaitCopies can tell the crawler when n copies exist — the owner's and
// n-1 replicas' — or that the push will not make them.

// ErrFewerCopies is wrapped by WaitCopies when the push cannot make the
// copies asked for: the range has fewer replicas, the record is not in
// one of this node's own ranges, or the offers to enough replicas failed.
// Rounds still copy the record later.
var ErrFewerCopies = errors.New("replication: fewer copies than asked")

// maxTracked bounds the records tracked for WaitCopies; past it, those
// every replica has answered for are forgotten (a record nobody waits
// for: stored by another path than the crawler's).
const maxTracked = pushQueueLen

// copyTracker follows one record's copies. Guarded by Replicator.mu.
type copyTracker struct {
	replicas map[ring.Contact]bool // replicas it was handed to; true once confirmed
	failed   map[ring.Contact]bool // replicas that gave up on it
	routed   bool                  // dispatched at least once
	lost     bool                  // the push will copy it nowhere (foreign, dropped)
	wake     chan struct{}         // closed and replaced at each change
}

func newCopyTracker() *copyTracker {
	return &copyTracker{replicas: map[ring.Contact]bool{}, failed: map[ring.Contact]bool{}, wake: make(chan struct{})}
}

// changed wakes the waiters of t.
func (t *copyTracker) changed() {
	close(t.wake)
	t.wake = make(chan struct{})
}

// acked returns how many replicas confirmed the record.
func (t *copyTracker) acked() int {
	n := 0
	for _, ok := range t.replicas {
		if ok {
			n++
		}
	}
	return n
}

// possible returns how many replicas have confirmed the record or may
// still confirm it.
func (t *copyTracker) possible() int {
	n := 0
	for c, ok := range t.replicas {
		if ok || !t.failed[c] {
			n++
		}
	}
	return n
}

// settled reports whether every replica handed the record has answered.
func (t *copyTracker) settled() bool {
	return t.lost || (t.routed && t.possible() == t.acked())
}

// Verdicts of copyTracker.verdict.
const (
	copiesPending = iota // confirmations may still come
	copiesMade           // enough replicas confirmed
	copiesShort          // too few replicas can confirm
)

// verdict tells whether need replicas confirmed t's record, or cannot.
func (t *copyTracker) verdict(need int) int {
	switch {
	case t.acked() >= need:
		return copiesMade
	case t.lost || (t.routed && t.possible() < need):
		return copiesShort
	}
	return copiesPending
}

// trackLocked starts tracking e, unless tracking is off. The caller
// holds r.mu.
func (r *Replicator) trackLocked(e archive.Entry) *copyTracker {
	if !r.cfg.TrackCopies {
		return nil
	}
	if len(r.trk) >= maxTracked {
		for k, t := range r.trk {
			if t.settled() {
				delete(r.trk, k)
			}
		}
	}
	t := newCopyTracker()
	r.trk[e] = t
	return t
}

// routedLocked records that t's record was handed to replicas cs (none:
// its range has no replica now). The caller holds r.mu.
func routedLocked(t *copyTracker, cs []ring.Contact) {
	if t == nil {
		return
	}
	t.routed = true
	for _, c := range cs {
		if _, ok := t.replicas[c]; !ok {
			t.replicas[c] = false
		}
		delete(t.failed, c) // handed again: it may still confirm
	}
	t.changed()
}

// ackedLocked records that replica c confirmed t's record, or (ok false)
// gave up on it. The caller holds r.mu.
func ackedLocked(t *copyTracker, c ring.Contact, ok bool) {
	if t == nil {
		return
	}
	if ok {
		t.replicas[c] = true
	} else if !t.replicas[c] {
		t.failed[c] = true
	}
	t.changed()
}

// lostLocked records that the push will not copy t's record. The caller
// holds r.mu.
func lostLocked(t *copyTracker) {
	if t == nil {
		return
	}
	t.lost = true
	t.changed()
}

// WaitCopies returns once n copies of v exist — this node's and n-1
// replicas' confirmed imports through the push — or with an error
// wrapping ErrFewerCopies as soon as the push cannot make them, or
// ctx's error when it ends first. v is a version this node stored (its
// store's OnAdd fed Notify); n <= 1 returns at once. It needs
// Config.TrackCopies. It implements crawl.CopyWaiter.
func (r *Replicator) WaitCopies(ctx context.Context, v archive.Version, n int) error {
	if n <= 1 {
		return nil
	}
	e := v.Entry()
	need := n - 1
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.trk[e]
	if !ok {
		r.st.Push.WaitsShort++
		return fmt.Errorf("wait for %d copies of %s: %w: not tracked", n, e.Name(), ErrFewerCopies)
	}
	defer delete(r.trk, e)
	for {
		switch t.verdict(need) {
		case copiesMade:
			r.st.Push.Waits++
			return nil
		case copiesShort:
			r.st.Push.WaitsShort++
			return fmt.Errorf("wait for %d copies of %s: %w: %d of %d replicas confirmed, %d may",
				n, e.Name(), ErrFewerCopies, t.acked(), len(t.replicas), t.possible())
		}
		wake := t.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
		}
		r.mu.Lock()
		if err := ctx.Err(); err != nil {
			r.st.Push.WaitsLate++
			return fmt.Errorf("wait for %d copies of %s: %d confirmed: %w", n, e.Name(), t.acked(), err)
		}
	}
}
