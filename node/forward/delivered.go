package forward

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/herod-archive/herod/internal/id"
)

// maxDelivered bounds the forwarder's memory of links delivered today.
// It covers a node's day at the design load (a million URLs, each link
// target once however many pages carry it) in at most 16 MiB: past it
// the memory starts afresh, which only costs sending some links again,
// where the owner's URL-seen test (a read of its queue database for
// each) drops them.
const maxDelivered = 3 << 19

// deliveredSet remembers the links their owners acknowledged today, as
// plain links or as page requisites, in an open-addressed table of 8-byte
// keys: 11 to 21 bytes a link as the table fills, where a Go map of
// 20-byte keys took 50. 2¹⁸ links in such a map was a quarter of a day
// at the design load, and every link it had forgotten cost a read of
// the owner's queue database.
//
// A link is remembered by the first 63 bits of its key (the SHA-1 of its
// URL) and a bit for a requisite: a URL that shares them with one
// remembered (about one chance in 10¹³ with a million remembered, and
// SHA-1 makes one costly to find) is not forwarded that day. A key's
// first slot comes from a hash with a seed of the set's own
// (hash/maphash), as a Go map's does: a site that fills its pages with
// links ground to share slots cannot make every lookup walk one long run
// of the table. The zero value is an empty set.
type deliveredSet struct {
	slots []uint64 // 0: empty; the length a power of two, at most 4/3 maxDelivered
	n     int
	seed  maphash.Seed // set with the first table
}

// deliveredHash is the hash of a key's slot: maphash with the set's
// seed (tests replace it to crowd keys into chosen slots).
var deliveredHash = func(seed maphash.Seed, x uint64) uint64 { return maphash.Comparable(seed, x) }

// minDeliveredSlots is the table's first size.
const minDeliveredSlots = 1 << 10

// deliveredKey returns the set's key of k: a requisite's has the low
// bit. A key is never 0 (the empty slot).
func deliveredKey(k id.ID, req bool) uint64 {
	x := binary.BigEndian.Uint64(k[:8]) &^ 1
	if x == 0 {
		x = 2
	}
	if req {
		x |= 1
	}
	return x
}

// home returns x's first slot; a link's two keys share it.
func (s *deliveredSet) home(x uint64) int {
	return int(deliveredHash(s.seed, x>>1) & uint64(len(s.slots)-1))
}

// find returns x's slot, or the empty slot where it would go.
func (s *deliveredSet) find(x uint64) (int, bool) {
	if len(s.slots) == 0 {
		return 0, false
	}
	mask := len(s.slots) - 1
	for i := s.home(x); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case x:
			return i, true
		case 0:
			return i, false
		}
	}
}

// has reports whether k was delivered today in a way that covers a
// delivery as a requisite (req) or as a plain link: a requisite's covers
// both, a plain link's only a plain link.
func (s *deliveredSet) has(k id.ID, req bool) bool {
	if _, ok := s.find(deliveredKey(k, true)); ok {
		return true
	}
	if req {
		return false
	}
	_, ok := s.find(deliveredKey(k, false))
	return ok
}

// add remembers k delivered as a requisite (req) or a plain link,
// starting afresh when the set holds maxDelivered.
func (s *deliveredSet) add(k id.ID, req bool) {
	if s.has(k, req) {
		return
	}
	if req {
		s.remove(deliveredKey(k, false))
	}
	if s.n >= maxDelivered {
		s.clear()
	}
	if (s.n+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	x := deliveredKey(k, req)
	i, _ := s.find(x)
	s.slots[i] = x
	s.n++
}

// grow doubles the table (to minDeliveredSlots at first).
func (s *deliveredSet) grow() {
	old := s.slots
	if old == nil {
		s.seed = maphash.MakeSeed()
	}
	s.slots = make([]uint64, max(minDeliveredSlots, 2*len(old)))
	for _, x := range old {
		if x != 0 {
			i, _ := s.find(x)
			s.slots[i] = x
		}
	}
}

// forget drops what the set remembers of k.
func (s *deliveredSet) forget(k id.ID) {
	s.remove(deliveredKey(k, false))
	s.remove(deliveredKey(k, true))
}

// remove drops x, moving back the keys after it that its slot had pushed
// along, so that no lookup stops short of them.
func (s *deliveredSet) remove(x uint64) {
	i, ok := s.find(x)
	if !ok {
		return
	}
	mask := len(s.slots) - 1
	for j := (i + 1) & mask; s.slots[j] != 0; j = (j + 1) & mask {
		// The key at j stays unless its home lies cyclically outside
		// (i, j]: then slot i is on its probe path, and it moves there.
		h := s.home(s.slots[j])
		if i <= j && i < h && h <= j || i > j && (i < h || h <= j) {
			continue
		}
		s.slots[i] = s.slots[j]
		i = j
	}
	s.slots[i] = 0
	s.n--
}

// clear forgets every link and keeps the table: a node that filled it
// one day will again.
func (s *deliveredSet) clear() {
	clear(s.slots)
	s.n = 0
}

// len returns the number of keys held.
func (s *deliveredSet) len() int { return s.n }
