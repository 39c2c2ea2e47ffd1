package links

import (
	"slices"
	"sync"
)

// DefaultDirtyMax is NewDirty's bound when max <= 0: at most this many
// marks are kept between two sweeps (about 20 MiB of URLs of 60 bytes;
// a day of a million URLs that stores 200,000 versions within a sweep's
// 10 minutes stays under it); past it the next sweep reads every
// source.
const DefaultDirtyMax = 1 << 18

// dirtyMarkBytes is the mean length of a mark's source a set holds at
// most: its sources' bytes are bounded by max times it (32 MiB for
// DefaultDirtyMax), so long URLs cannot make the count bound hold
// hundreds of MiB.
const dirtyMarkBytes = 128

// Dirty is the set of sources a link sweep must read: those that got a
// new version, or whose records were not delivered, since the last
// sweep took the set. It is bounded: a Mark past its bound drops the
// set and asks for a full sweep instead (every source read, as when
// nothing is known), so an overflow costs one full sweep and loses
// nothing. A new Dirty asks for a full sweep too: what changed before it
// was made is unknown (a restart). Dirty is safe for concurrent use and
// Mark never blocks on I/O.
type Dirty struct {
	mu    sync.Mutex
	max   int
	set   []string // marks in arrival order, repeats included
	bytes int      // the length of set's sources, summed
	full  bool
}

// NewDirty returns an empty set of at most max sources (DefaultDirtyMax
// when max <= 0) of at most 128 bytes each on average that asks for a
// full sweep first.
func NewDirty(max int) *Dirty {
	if max <= 0 {
		max = DefaultDirtyMax
	}
	return &Dirty{max: max, full: true}
}

// Mark adds source to the set.
func (d *Dirty) Mark(source string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		return
	}
	if len(d.set) >= d.max || d.bytes+len(source) > d.max*dirtyMarkBytes {
		d.full, d.set, d.bytes = true, nil, 0
		return
	}
	d.set = append(d.set, source)
	d.bytes += len(source)
}

// MarkAll asks the next sweep to read every source (the sources this
// node owns changed, or marks were lost).
func (d *Dirty) MarkAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full, d.set, d.bytes = true, nil, 0
}

// Take empties the set and returns its sources, sorted, each once, or full when
// the sweep must read every source instead (sources is then nil).
func (d *Dirty) Take() (sources []string, full bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		d.full, d.set, d.bytes = false, nil, 0
		return nil, true
	}
	sources, d.set, d.bytes = d.set, nil, 0
	slices.Sort(sources)
	return slices.Compact(sources), false
}

// Len returns how many marks the set holds (a source marked twice
// counts twice until Take).
func (d *Dirty) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.set)
}

// Full reports whether the next Take asks for a sweep of every source.
func (d *Dirty) Full() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.full
}
