package search

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Ends (format 5). A crawl ends an old version of every page that
// changed: the version's row lies anywhere in the n table, so writing
// its end into the row made each of goleveldb's level-0 tables span
// the whole table and its compaction rewrite all of it, a cost that
// grew with the store. A version's end is instead written alone, in
// the end table, when the rest of its row is unchanged:
//
//	e num(4) → varint(to)
//
// A version's end is the earlier of its row's and its e row's
// (mergeEnd); every read of a version (a query, Range, a write's
// merge, the collection statistics) reads both. The end table is
// small, a few bytes a pending end, so a level-0 table's compaction
// rewrites little of it; once it holds foldAt ends, they are folded
// into their rows in one pass (foldEnds): the n table is rewritten
// once for many ends (a cost per end that does not grow with the
// store, as foldAt grows with it) and the end table emptied.

// endKey is the key of version num's pending end.
func endKey(num uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pEnd}, num)
}

// Fold bounds: the end table is folded into the rows once it holds
// foldFraction-th of the versions numbered, and at least foldMinEnds.
const (
	foldFraction = 8
	foldMinEnds  = 16384
)

// foldAt returns how many pending ends start a fold; the caller holds
// s.mu.
func (s *Store) foldAt() int64 {
	return max(s.foldMin, int64(s.next)/s.foldFrac)
}

// endCursor reads pending ends through an iterator over the end table,
// cheapest when asked in ascending number order (a term's scan): it
// moves on by Next while the end it is at lies behind, a few at most,
// and seeks otherwise.
type endCursor struct {
	it     iterator.Iterator
	sought bool
	from   uint32 // it is at the first end of number ≥ from, or past the last
	valid  bool
	at     uint32 // the number of the end it is at, if valid
}

func newEndCursor(r kv) *endCursor {
	return &endCursor{it: r.NewIterator(util.BytesPrefix([]byte{pEnd}), nil)}
}

// release releases the iterator.
func (c *endCursor) release() { c.it.Release() }

// end returns version num's pending end, if it has one.
func (c *endCursor) end(num uint32) (int64, bool) {
	if c.sought && num >= c.from && c.valid && c.at < num {
		for range 4 {
			c.valid = c.it.Next() && c.setAt()
			if !c.valid || c.at >= num {
				break
			}
		}
		c.from = num
	}
	if !c.sought || num < c.from || (c.valid && c.at < num) {
		c.sought, c.from = true, num
		c.valid = c.it.Seek(endKey(num)) && c.setAt()
	}
	if !c.valid || c.at != num {
		return 0, false
	}
	to, n := binary.Varint(c.it.Value())
	if n <= 0 {
		return 0, false // does not decode: the row's end holds
	}
	return to, true
}

// setAt reads the number of the key the iterator is at.
func (c *endCursor) setAt() bool {
	k := c.it.Key()
	if len(k) != 5 {
		return false
	}
	c.at = binary.BigEndian.Uint32(k[1:])
	return true
}

// withEnd returns v with its pending end merged in.
func (c *endCursor) withEnd(v version) version {
	if to, ok := c.end(v.num); ok {
		v.to = mergeEnd(v.to, to)
	}
	return v
}

// err returns the iterator's error.
func (c *endCursor) err() error { return c.it.Error() }

// foldEnds folds every pending end into its version's row (and
// document row), in synced batches of up to migrateBatch ends that
// each write the rows and delete the ends, so that a crash loses
// nothing. It returns how many pending ends it removed. The caller
// holds s.mu (or the store is not yet shared).
func (s *Store) foldEnds() (int64, error) {
	var total int64
	for {
		n, err := s.foldSome()
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("search store: fold ends: %w", err)
		}
		if n < migrateBatch {
			return total, nil
		}
	}
}

// foldSome folds up to migrateBatch pending ends in one synced batch
// and returns how many it removed.
func (s *Store) foldSome() (int, error) {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pEnd}), nil)
	defer it.Release()
	nums := s.db.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer nums.Release()
	var b leveldb.Batch
	n := 0
	for n < migrateBatch && it.Next() {
		n++
		k := bytes.Clone(it.Key())
		b.Delete(k)
		to, vn := binary.Varint(it.Value())
		if len(k) != 5 || vn <= 0 {
			continue // not an end: dropped, as reads skipped it
		}
		v, ok := lookup(nums, binary.BigEndian.Uint32(k[1:]))
		if !ok {
			continue // its version is gone
		}
		if nt := mergeEnd(v.to, to); nt != v.to {
			v.to = nt
			b.Put(numKey(v.num), v.value())
			if v.doc {
				b.Put(docKey(v.num), v.docValue())
			}
		}
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	if err := nums.Error(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	if err := s.dbWrite(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return 0, err
	}
	return n, nil
}
