package forward

import (
	"encoding/binary"
	"hash/maphash"
	"math/rand"
	"runtime"
	"strconv"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

func TestDeliveredSet(t *testing.T) {
	var s deliveredSet
	a, b := id.OfString("http://a.example/"), id.OfString("http://b.example/")
	if s.has(a, false) || s.has(a, true) {
		t.Fatal("an empty set has a link")
	}
	s.forget(a)
	s.add(a, false)
	if !s.has(a, false) || s.has(a, true) {
		t.Fatal("a plain link's delivery covers a plain link only")
	}
	s.add(a, true)
	if !s.has(a, false) || !s.has(a, true) || s.len() != 1 {
		t.Fatalf("a requisite's delivery covers both, in one entry: %d entries", s.len())
	}
	s.add(a, false)
	if !s.has(a, true) {
		t.Fatal("a later plain delivery undid the requisite's")
	}
	s.add(b, true)
	s.forget(a)
	if s.has(a, false) || s.has(a, true) || !s.has(b, false) || s.len() != 1 {
		t.Fatal("forget dropped the wrong link")
	}
	s.clear()
	if s.has(b, false) || s.len() != 0 {
		t.Fatal("clear kept a link")
	}
}

// TestDeliveredSetModel runs random adds and forgets on keys that crowd
// a few home slots (the hash replaced by the identity, so that probe
// runs wrap the table and removals move keys back) and checks every
// answer against a map.
func TestDeliveredSetModel(t *testing.T) {
	hash := deliveredHash
	deliveredHash = func(_ maphash.Seed, x uint64) uint64 { return x }
	t.Cleanup(func() { deliveredHash = hash })
	r := rand.New(rand.NewSource(1))
	var s deliveredSet
	model := map[id.ID]bool{} // true: as a requisite
	keys := make([]id.ID, 3000)
	for i := range keys {
		// 24 distinct homes whatever the table's size: 12 at its start,
		// 12 at its end.
		home := uint64(r.Intn(12))
		if r.Intn(2) == 0 {
			home = 1<<30 - 1 - home
		}
		x := home<<1 | uint64(i)<<40
		for b := range 8 {
			keys[i][b] = byte(x >> (56 - 8*b))
		}
		keys[i][8] = byte(i)
	}
	for step := range 200_000 {
		k := keys[r.Intn(len(keys))]
		switch op := r.Intn(10); {
		case op < 6:
			req := r.Intn(3) == 0
			s.add(k, req)
			model[k] = model[k] || req
		case op < 8:
			s.forget(k)
			delete(model, k)
		default:
			req := r.Intn(2) == 0
			asReq, ok := model[k]
			if want := ok && (asReq || !req); s.has(k, req) != want {
				t.Fatalf("step %d: has(%x, %v) = %v, want %v", step, k[:8], req, !want, want)
			}
		}
		if s.len() != len(model) {
			t.Fatalf("step %d: %d keys, model %d", step, s.len(), len(model))
		}
	}
}

// TestDeliveredSetBound: the set never holds more than maxDelivered and
// starts afresh when full.
func TestDeliveredSetBound(t *testing.T) {
	var s deliveredSet
	first := id.OfString("http://first.example/")
	s.add(first, false)
	for i := 1; i < maxDelivered; i++ {
		s.add(id.OfString("http://x.example/"+strconv.Itoa(i)), false)
	}
	if s.len() != maxDelivered || !s.has(first, false) || len(s.slots) != 1<<21 {
		t.Fatalf("%d entries in %d slots, want %d with the first", s.len(), len(s.slots), maxDelivered)
	}
	s.add(id.OfString("http://one-more.example/"), false)
	if s.len() != 1 || s.has(first, false) {
		t.Fatalf("a full set took one more: %d entries", s.len())
	}
}

// TestDeliveredSetMemory holds the set's memory at a million links to the
// figure its comment states.
func TestDeliveredSetMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var s deliveredSet
	for i := range 1_000_000 {
		s.add(id.OfString("http://x.example/"+strconv.Itoa(i)), i%8 == 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(s.len())
	t.Logf("%.1f bytes a link, %d links", per, s.len())
	if per > 17 {
		t.Fatalf("%.1f bytes a link, want at most 16.8 (16 MiB)", per)
	}
	runtime.KeepAlive(&s)
}

// TestDeliveredSetSpreadsGround: keys that share every bit the table's
// size would take from them (a site's links ground to collide) still
// spread over the table: no lookup walks a long run. Random slots at
// this load (0.61) make runs of about 100 at the longest (85 the worst
// of 300 seeds); slots taken from the ground bits make one run of all
// 20,000 keys.
func TestDeliveredSetSpreadsGround(t *testing.T) {
	var s deliveredSet
	var k id.ID
	for i := range 20_000 {
		binary.BigEndian.PutUint64(k[:8], uint64(i)<<40|0x2a<<1) // the same low 40 bits
		s.add(k, false)
	}
	longest, run := 0, 0
	for _, x := range append(s.slots, s.slots...) { // runs that wrap
		if x == 0 {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	if longest > 512 {
		t.Fatalf("a run of %d occupied slots among %d keys in %d slots", longest, s.len(), len(s.slots))
	}
}
