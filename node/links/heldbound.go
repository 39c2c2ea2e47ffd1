package links

import (
	"bytes"
	"hash/maphash"
	"math"
)

// A Put must not keep more than PerTarget records of a target, so it
// has to know how many the index holds of each target of its batch. A
// walk of the target's records (one seek) tells exactly, and at a
// million URLs each such seek reads a block of every level-0 table and
// of level 1 from the kernel, few of them in the block cache: 0.36 CPU
// seconds per 1,000 pages of a 1 M crawl day 0 (docs/scale-growth.md).
//
// heldBound tells, in fixed memory, an upper bound of the records held
// for any target: a count-min sketch of saturating counters, two per
// target (from a seeded hash, so that URLs cannot be ground to share
// them), each counting the records stored for every target that maps to
// it; the bound is the smaller of a target's two. Records are never
// removed from the index, so a counter only grows, and a bound is never
// below the truth. When a batch's records of a target cannot take it
// past the cap (bound + records ≤ PerTarget), Put reads each record by
// its key instead of walking the target: the bloom filters answer most
// of those reads (a new record is in no table) without reading a block.
// A target near its cap, or one whose counters are crowded, is walked
// as before, so what a Put keeps is exactly what the walk alone keeps.

// heldSlots is the number of counters (2²¹, 4 MiB): at 10 million
// records (a 1 M node's links) a counter holds about 10 records of
// targets other than its own, against a cap of 1,000.
const heldSlots = 1 << 21

type heldBound struct {
	seed maphash.Seed
	c    []uint16
}

func newHeldBound() *heldBound {
	return &heldBound{seed: maphash.MakeSeed(), c: make([]uint16, heldSlots)}
}

// slots returns target's two counters.
func (h *heldBound) slots(target string) (int, int) {
	v := maphash.String(h.seed, target)
	return int(v & (heldSlots - 1)), int((v >> 32) & (heldSlots - 1))
}

// bound returns an upper bound of the records held for target
// (math.MaxUint16 or more: unknown).
func (h *heldBound) bound(target string) int {
	i, j := h.slots(target)
	return int(min(h.c[i], h.c[j]))
}

// add counts n more records of target.
func (h *heldBound) add(target string, n int) {
	if n <= 0 {
		return
	}
	i, j := h.slots(target)
	h.c[i] = satAdd(h.c[i], n)
	if j != i {
		h.c[j] = satAdd(h.c[j], n)
	}
}

// merge adds o's counts to h's (o has h's seed).
func (h *heldBound) merge(o *heldBound) {
	for i, v := range o.c {
		h.c[i] = satAdd(h.c[i], int(v))
	}
}

func satAdd(c uint16, n int) uint16 {
	return uint16(min(int(c)+n, math.MaxUint16))
}

// keyTarget returns the target of a link key (pLink, target, 0, ...), or
// nil when the key has no such form.
func keyTarget(k []byte) []byte {
	if len(k) < 2 || k[0] != pLink {
		return nil
	}
	i := bytes.IndexByte(k[1:], 0)
	if i < 0 {
		return nil
	}
	return k[1 : 1+i]
}
