package replication

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Ownership: when this node was up and owned a key, as it saw its
// ranges change. A capture of a key made then was this node's to make:
// another node's capture of that time is no take-over, and rounds hold
// it (guard.go). The history is kept in memory and, with
// Config.OwnedFile, on disk with the last time the node was known up
// (each round writes it): after a restart the spans of the last run end
// at that time, so what others fetched while this node was down is
// imported as before, and a capture dated while it ran is held however
// often it restarts.

// maxOwnedSpans bounds the spans kept; the oldest is forgotten first,
// which only makes captures of its time pass as take-overs.
const maxOwnedSpans = 1024

// ownedSpan is one state of a virtual server's range: from Since until
// Until (zero while it is the range now), it was (Start, Vnode].
type ownedSpan struct {
	Vnode id.ID     `json:"vnode"`
	Start id.ID     `json:"start"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until,omitzero"`
}

// holds reports whether key was in the span's range at t; an open span
// lasts until now.
func (s ownedSpan) holds(key id.ID, t time.Time) bool {
	return !t.Before(s.Since) && (s.Until.IsZero() || t.Before(s.Until)) && id.InHalfOpen(key, s.Start, s.Vnode)
}

// ownedFile is what Config.OwnedFile holds.
type ownedFile struct {
	Alive time.Time   `json:"alive"` // the node was up until then
	Spans []ownedSpan `json:"spans"`
}

// ownedRanges is the history of the local virtual servers' ranges. Safe
// for concurrent use.
type ownedRanges struct {
	now   func() time.Time // the clock of observations; nil means time.Now (tests set it)
	mu    sync.Mutex
	spans []ownedSpan    // oldest first
	open  map[id.ID]bool // virtual servers with an open span
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
	if i := o.openLocked(v); i >= 0 {
		if o.spans[i].Start == g.Start {
			return
		}
		o.spans[i].Until = now
	}
	if len(o.spans) >= maxOwnedSpans {
		if s := o.spans[0]; s.Until.IsZero() {
			delete(o.open, s.Vnode)
		}
		o.spans = append(o.spans[:0], o.spans[1:]...)
	}
	o.spans = append(o.spans, ownedSpan{Vnode: v, Start: g.Start, Since: now})
	if o.open == nil {
		o.open = map[id.ID]bool{}
	}
	o.open[v] = true
}

// openLocked returns the index of v's open span, -1 if it has none.
func (o *ownedRanges) openLocked(v id.ID) int {
	if !o.open[v] {
		return -1
	}
	for i := len(o.spans) - 1; i >= 0; i-- {
		if o.spans[i].Vnode == v && o.spans[i].Until.IsZero() {
			return i
		}
	}
	return -1
}

// observeStatus records the ranges of every local virtual server in st,
// and ends the spans of those it no longer lists.
func (o *ownedRanges) observeStatus(st ring.Status, now time.Time) {
	live := make(map[id.ID]bool, len(st.Vnodes))
	for _, v := range st.Vnodes {
		live[v.ID] = true
		o.observe(v.ID, v.Range, now)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for v := range o.open {
		if !live[v] {
			if i := o.openLocked(v); i >= 0 {
				o.spans[i].Until = now
			}
			delete(o.open, v)
		}
	}
}

// ownedAt reports whether this node owned key at t by its history.
func (o *ownedRanges) ownedAt(key id.ID, t time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if s.holds(key, t) {
			return true
		}
	}
	return false
}

// firstOwned returns the earliest time at which the history has this
// node own key, and false if it never has.
func (o *ownedRanges) firstOwned(key id.ID) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans { // oldest first
		if id.InHalfOpen(key, s.Start, s.Vnode) {
			return s.Since, true
		}
	}
	return time.Time{}, false
}

// save writes the history to path, with now as the time the node was
// last known up: a temporary file renamed over it (not synced: a crash
// that loses it only ends the last run's spans earlier).
func (o *ownedRanges) save(path string, now time.Time) error {
	o.mu.Lock()
	b, err := json.Marshal(ownedFile{Alive: now, Spans: o.spans})
	o.mu.Unlock()
	if err != nil {
		return fmt.Errorf("replication: owned ranges: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("replication: owned ranges: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replication: owned ranges: %w", err)
	}
	return nil
}

// load reads the history a former run saved at path: its open spans end
// when that run was last known up. A missing file is an empty history;
// one that does not parse is reported (and the history left empty).
func (o *ownedRanges) load(path string) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("replication: owned ranges: %w", err)
	}
	var f ownedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("replication: owned ranges %s: %w", path, err)
	}
	var spans []ownedSpan
	for _, s := range f.Spans {
		if s.Until.IsZero() {
			s.Until = f.Alive
		}
		if s.Until.After(s.Since) {
			spans = append(spans, s)
		}
	}
	if len(spans) > maxOwnedSpans {
		spans = spans[len(spans)-maxOwnedSpans:]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.spans = append(spans, o.spans...)
	return nil
}
