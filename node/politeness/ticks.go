package politeness

// tickSet is the set of a host schedule's granted ticks, counted from
// the schedule's base: a bitset of at most maxScheduleTicks+1 bits (2 KiB)
// whatever the interval. Its words are kept when the schedule starts a new
// grid or drops past ticks, so a busy host's schedule allocates nothing
// per grant, even at a microsecond interval with slots a millisecond
// apart (the scale benchmark's unlimited host rate). The zero value is
// empty.
type tickSet struct {
	w []uint64
}

// has reports whether tick i is in the set.
func (t *tickSet) has(i int64) bool {
	wi := i >> 6
	return i >= 0 && wi < int64(len(t.w)) && t.w[wi]&(1<<(uint64(i)&63)) != 0
}

// add puts tick i (0 ≤ i ≤ maxScheduleTicks) in the set.
func (t *tickSet) add(i int64) {
	wi := int(i >> 6)
	if wi >= len(t.w) {
		t.w = append(t.w, make([]uint64, wi+1-len(t.w))...)
	}
	t.w[wi] |= 1 << (uint64(i) & 63)
}

// drop removes ticks 0..n-1 and numbers the rest from 0: the grid's base
// moved n ticks forward.
func (t *tickSet) drop(n int64) {
	if n <= 0 {
		return
	}
	if n >= int64(len(t.w))<<6 {
		t.w = t.w[:0]
		return
	}
	ws, b := int(n>>6), uint(n&63)
	keep := len(t.w) - ws
	if b == 0 {
		copy(t.w, t.w[ws:])
	} else {
		for i := range keep {
			v := t.w[i+ws] >> b
			if i+ws+1 < len(t.w) {
				v |= t.w[i+ws+1] << (64 - b)
			}
			t.w[i] = v
		}
	}
	t.w = t.w[:keep]
	for len(t.w) > 0 && t.w[len(t.w)-1] == 0 {
		t.w = t.w[:len(t.w)-1]
	}
}

// cleared returns the empty set, keeping t's words for reuse.
func (t tickSet) cleared() tickSet { return tickSet{w: t.w[:0]} }
