package links

import (
	"slices"
	"sync"
)

// DefaultDirtyMax is NewDirty's bound when max <= 0: at most this many
// sources are remembered between two sweeps (about 8 MiB of URLs at
// most); past it the next sweep reads every source.
const DefaultDirtyMax = 1 << 16

// Dirty is the set of sources a link sweep must read: those that got a
// new version, or whose records were not delivered, since the last
// sweep took the set. It is bounded: a Mark past its bound drops the
// set and asks for a full sweep instead (every source read, as when
// nothing is known), so an overflow costs one full sweep and loses
// nothing. A new Dirty asks for a full sweep too: what changed before it
// was made is unknown (a restart). Dirty is safe for concurrent use and
// Mark never blocks on I/O.
type Dirty struct {
	mu   sync.Mutex
	max  int
	set  map[string]struct{}
	full bool
}

// NewDirty returns an empty set of at most max sources (DefaultDirtyMax
// when max <= 0) that asks for a full sweep first.
func NewDirty(max int) *Dirty {
	if max <= 0 {
		max = DefaultDirtyMax
	}
	return &Dirty{max: max, set: map[string]struct{}{}, full: true}
}

// Mark adds source to the set.
func (d *Dirty) Mark(source string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		return
	}
	if _, ok := d.set[source]; ok {
		return
	}
	if len(d.set) >= d.max {
		d.full, d.set = true, map[string]struct{}{}
		return
	}
	d.set[source] = struct{}{}
}

// MarkAll asks the next sweep to read every source (the sources this
// node owns changed, or marks were lost).
func (d *Dirty) MarkAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full, d.set = true, map[string]struct{}{}
}

// Take empties the set and returns its sources, sorted, or full when
// the sweep must read every source instead (sources is then nil).
func (d *Dirty) Take() (sources []string, full bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		d.full, d.set = false, map[string]struct{}{}
		return nil, true
	}
	if len(d.set) == 0 {
		return nil, false
	}
	sources = make([]string, 0, len(d.set))
	for s := range d.set {
		sources = append(sources, s)
	}
	d.set = map[string]struct{}{}
	slices.Sort(sources)
	return sources, false
}

// Len returns how many sources the set holds.
func (d *Dirty) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.set)
}
