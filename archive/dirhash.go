package archive

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Directory levels of the hash tree. Level 0 is the root, level 1 the 256
// directories objects/<byte0>, level 2 (LeafLevel) the 65,536 directories
// objects/<byte0>/<byte1> that hold the files.
const (
	RootLevel = 0
	LeafLevel = 2
)

// DirSum summarizes a set of version files: Sum is the XOR of SHA-1 of
// each file's base name (Entry.Name) and Count their number. Replicas that
// hold the same files in a directory or range have equal DirSums; honest
// replicas with different files have different ones except with
// negligible probability. XOR makes the sum of a directory the XOR of its
// children's sums, and lets every write update all three levels in O(1).
// An XOR set hash is not collision-resistant against a peer that chooses
// entries to cancel out; such a peer could only make a range look in sync,
// since every file a replica imports is verified against its name.
type DirSum struct {
	Sum   id.ID `json:"sum"`
	Count int64 `json:"count"`
}

// add folds one entry (or another sum) into d.
func (d *DirSum) add(o DirSum) {
	for i := range d.Sum {
		d.Sum[i] ^= o.Sum[i]
	}
	d.Count += o.Count
}

func entrySum(e Entry) DirSum { return DirSum{Sum: e.hash(), Count: 1} }

func (d DirSum) encode() []byte {
	return binary.AppendUvarint(append([]byte(nil), d.Sum[:]...), uint64(d.Count))
}

func decodeDirSum(val []byte) (DirSum, error) {
	var d DirSum
	if len(val) <= id.Size {
		return d, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	copy(d.Sum[:], val)
	n, k := binary.Uvarint(val[id.Size:])
	if k <= 0 || k != len(val)-id.Size {
		return DirSum{}, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	d.Count = int64(n)
	return d, nil
}

func (s *Store) getSum(key []byte) (DirSum, error) {
	val, err := s.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return DirSum{}, nil
	}
	if err != nil {
		return DirSum{}, err
	}
	return decodeDirSum(val)
}

// DirHash returns the sum of the directory at level (0, 1 or 2) named by
// the first level bytes of prefix: DirHash(ctx, 0, nil) covers the whole
// store, DirHash(ctx, 2, []byte{0xab, 0xcd}) the files in objects/ab/cd.
func (s *Store) DirHash(ctx context.Context, level int, prefix []byte) (DirSum, error) {
	if err := ctx.Err(); err != nil {
		return DirSum{}, fmt.Errorf("archive dirhash: %w", err)
	}
	if level < RootLevel || level > LeafLevel || len(prefix) < level {
		return DirSum{}, fmt.Errorf("archive dirhash: bad level %d for prefix of %d bytes", level, len(prefix))
	}
	d, err := s.getSum(hashKey(level, prefix))
	if err != nil {
		return DirSum{}, fmt.Errorf("archive dirhash: %w", err)
	}
	return d, nil
}

// ChildHashes returns the sums of the 256 subdirectories of the directory
// at level 0 or 1 named by prefix (index i is the child with next byte i).
func (s *Store) ChildHashes(ctx context.Context, level int, prefix []byte) ([256]DirSum, error) {
	var out [256]DirSum
	if level < RootLevel || level >= LeafLevel || len(prefix) < level {
		return out, fmt.Errorf("archive child hashes: bad level %d for prefix of %d bytes", level, len(prefix))
	}
	start := hashKey(level+1, append(append([]byte(nil), prefix[:level]...), 0))
	it := s.db.NewIterator(util.BytesPrefix(start[:len(start)-1]), nil)
	defer it.Release()
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("archive child hashes: %w", err)
		}
		k := it.Key()
		d, err := decodeDirSum(it.Value())
		if err != nil {
			return out, fmt.Errorf("archive child hashes: %w", err)
		}
		out[k[len(k)-1]] = d
	}
	if err := it.Error(); err != nil {
		return out, fmt.Errorf("archive child hashes: %w", err)
	}
	return out, nil
}

// Leaves is the number of leaf directories (LeafLevel): a key's leaf is
// LeafOf(key).
const Leaves = 1 << 16

// LeafOf returns the index of key's leaf directory (objects/<byte0>/<byte1>)
// in LeafHashes' slice.
func LeafOf(key id.ID) int { return int(key[0])<<8 | int(key[1]) }

// LeafHashes returns the sums of all Leaves leaf directories, indexed by
// LeafOf: one scan of the index's sums, which a store of a million
// versions answers in tens of milliseconds.
func (s *Store) LeafHashes(ctx context.Context) ([]DirSum, error) {
	out := make([]DirSum, Leaves)
	prefix := []byte{pHash, LeafLevel}
	it := s.db.NewIterator(util.BytesPrefix(prefix), nil)
	defer it.Release()
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("archive leaf hashes: %w", err)
		}
		k := it.Key()
		if len(k) != len(prefix)+LeafLevel {
			return nil, fmt.Errorf("archive leaf hashes: %w: key of %d bytes", ErrCorrupt, len(k))
		}
		d, err := decodeDirSum(it.Value())
		if err != nil {
			return nil, fmt.Errorf("archive leaf hashes: %w", err)
		}
		out[int(k[2])<<8|int(k[3])] = d
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("archive leaf hashes: %w", err)
	}
	return out, nil
}

// DirRange returns the ring range (a, b] holding exactly the keys of the
// directory at level named by the first level bytes of prefix, for use
// with RangeSum, Range and Entries. The root is the whole ring (a == b).
func DirRange(level int, prefix []byte) (a, b id.ID) {
	var p id.ID
	copy(p[:], prefix[:min(level, len(prefix))])
	lo, hi := blockBounds(level, p)
	if level == RootLevel {
		return id.ID{}, id.ID{}
	}
	return prevID(lo), hi
}

// prevID returns x - 1 modulo 2^160.
func prevID(x id.ID) id.ID {
	for i := len(x) - 1; i >= 0; i-- {
		x[i]--
		if x[i] != 0xff {
			break
		}
	}
	return x
}

// keyRange is an inclusive range [lo, hi] of keys that does not wrap.
type keyRange struct{ lo, hi id.ID }

var maxID = func() id.ID {
	var x id.ID
	for i := range x {
		x[i] = 0xff
	}
	return x
}()

// splitRing turns the ring range (a, b] into at most two inclusive,
// non-wrapping ranges. a == b means the whole ring.
func splitRing(a, b id.ID) []keyRange {
	lo := a.AddPow2(0) // a+1, wrapping to zero after maxID
	switch {
	case a == b:
		return []keyRange{{id.ID{}, maxID}}
	case a.Less(b):
		return []keyRange{{lo, b}}
	case a == maxID:
		return []keyRange{{id.ID{}, b}}
	default:
		return []keyRange{{lo, maxID}, {id.ID{}, b}}
	}
}

// blockBounds returns the first and last key of the directory at level
// whose name is the first level bytes of p.
func blockBounds(level int, p id.ID) (id.ID, id.ID) {
	lo, hi := p, p
	for i := level; i < id.Size; i++ {
		lo[i], hi[i] = 0, 0xff
	}
	return lo, hi
}

func inRange(x id.ID, r keyRange) bool { return !x.Less(r.lo) && !r.hi.Less(x) }

// RangeSum returns the sum of the files whose key lies in the ring range
// (a, b] (a == b: the whole ring). Whole directories inside the range are
// read from their stored sums, so the cost is at most a few hundred index
// reads plus a scan of the two boundary leaf directories.
func (s *Store) RangeSum(ctx context.Context, a, b id.ID) (DirSum, error) {
	var total DirSum
	for _, r := range splitRing(a, b) {
		d, err := s.sumRange(ctx, RootLevel, id.ID{}, r)
		if err != nil {
			return DirSum{}, fmt.Errorf("archive range sum: %w", err)
		}
		total.add(d)
	}
	return total, nil
}

// sumRange sums the part of directory (level, p) that lies in r.
func (s *Store) sumRange(ctx context.Context, level int, p id.ID, r keyRange) (DirSum, error) {
	if err := ctx.Err(); err != nil {
		return DirSum{}, err
	}
	lo, hi := blockBounds(level, p)
	if hi.Less(r.lo) || r.hi.Less(lo) {
		return DirSum{}, nil
	}
	if !lo.Less(r.lo) && !r.hi.Less(hi) {
		return s.getSum(hashKey(level, p[:]))
	}
	if level == LeafLevel {
		var d DirSum
		err := s.scanKeys(ctx, keyRange{maxOf(lo, r.lo), minOf(hi, r.hi)}, func(v Version, e Entry) error {
			d.add(entrySum(e))
			return nil
		})
		return d, err
	}
	var d DirSum
	first, last := 0, 255
	if lo.Less(r.lo) {
		first = int(r.lo[level])
	}
	if r.hi.Less(hi) {
		last = int(r.hi[level])
	}
	for i := first; i <= last; i++ {
		c := p
		c[level] = byte(i)
		cd, err := s.sumRange(ctx, level+1, c, r)
		if err != nil {
			return DirSum{}, err
		}
		d.add(cd)
	}
	return d, nil
}

func maxOf(a, b id.ID) id.ID {
	if a.Less(b) {
		return b
	}
	return a
}

func minOf(a, b id.ID) id.ID {
	if a.Less(b) {
		return a
	}
	return b
}

// scanKeys calls fn for every version whose key lies in r, in key order
// then time order.
func (s *Store) scanKeys(ctx context.Context, r keyRange, fn func(Version, Entry) error) error {
	start := append([]byte{pVersion}, r.lo[:]...)
	limit := []byte{pVersion + 1}
	if r.hi != maxID {
		next := r.hi.AddPow2(0)
		limit = append([]byte{pVersion}, next[:]...)
	}
	it := s.db.NewIterator(&util.Range{Start: start, Limit: limit}, nil)
	defer it.Release()
	for n := 0; it.Next(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := s.decodeVersion(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if err := fn(v, v.Entry()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Range calls fn for every version whose key lies in the ring range
// (a, b] (a == b: the whole ring), in key order then time order: the files
// a replica of that range must hold. fn's error stops the walk and is
// returned.
func (s *Store) Range(ctx context.Context, a, b id.ID, fn func(Version) error) error {
	for _, r := range splitRing(a, b) {
		if err := s.scanKeys(ctx, r, func(v Version, _ Entry) error { return fn(v) }); err != nil {
			return fmt.Errorf("archive range: %w", err)
		}
	}
	return nil
}

// Entries returns the names of the files whose key lies in the ring range
// (a, b], in key order: what a replica lists after a DirSum mismatch.
func (s *Store) Entries(ctx context.Context, a, b id.ID) ([]Entry, error) {
	return s.EntriesUpTo(ctx, a, b, -1)
}

// EntriesUpTo is Entries for a range that may hold at most max names
// (max < 0: no bound): it stops scanning at the name after the max-th and
// returns an error wrapping ErrTooMany, so that a request for a huge range
// costs O(max) work and memory, not O(range).
func (s *Store) EntriesUpTo(ctx context.Context, a, b id.ID, max int) ([]Entry, error) {
	var out []Entry
	if max >= 0 {
		out = make([]Entry, 0, min(max, 1024))
	}
	for _, r := range splitRing(a, b) {
		err := s.scanKeys(ctx, r, func(_ Version, e Entry) error {
			if max >= 0 && len(out) == max {
				return fmt.Errorf("%w: more than %d in range", ErrTooMany, max)
			}
			out = append(out, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("archive entries: %w", err)
		}
	}
	return out, nil
}
