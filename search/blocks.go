package search

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/binread"
)

// A term's postings are stored in blocks, each holding up to maxBlock
// entries sorted by version number. A term's entries past its last
// full block are its open block, the tail (t term 0x00): appending a
// new version rewrites only it, in a small key range of tails. When the
// tail holds maxBlock entries it is sealed: written once as a full
// block under its last number, its bound, keyed bound first
// (F bound(4) term), so full blocks are written in the order they fill,
// at the end of their key range, and goleveldb's compactions do not
// rewrite the older ones. A term's full blocks are found through its
// index (x term 0x00 bound(4), no value); the full block of bound b
// covers the numbers (previous bound, b], the tail those past the last
// bound, so the block a number falls in is one Seek in the index. A
// block is uvarint(count), uvarint(first number), then each entry: its
// number as a delta from the one before (not for the first) and the
// term's frequencies: uvarint(tf<<1 | in title), then the title tf if
// in title. A posting is thus two or three bytes; the version's URL,
// key, range and length are written once, in the version table
// (versions.go).

// maxBlock is the most entries a block holds. A Put rewrites the blocks
// its entries fall in, so a block is small enough to rewrite and large
// enough that its key costs little per entry.
const maxBlock = 128

// entry is one posting in a block: a local version number and the
// term's frequencies in that version.
type entry struct {
	num     uint32
	tf      uint32
	titleTF uint32
}

// tailBound is the bound of a term's tail: it covers every number past
// its last full block.
const tailBound = math.MaxUint32

// termPrefix is prefix, the term and a 0x00.
func termPrefix(prefix byte, term string) []byte {
	b := make([]byte, 0, len(term)+2+4)
	b = append(b, prefix)
	b = append(b, term...)
	return append(b, 0)
}

// tailChunk is how many entries a sealed chunk of a tail holds: a tail
// of n entries is n/tailChunk sealed chunks, each keyed by its last
// number (t term 0x00 bound(4)), written once, and the open chunk of
// the rest (under tailBound). Appending a version rewrites the open
// chunk, a few entries, not the whole tail.
const tailChunk = 16

// tailKey is the key of term's tail chunk of bound bound.
func tailKey(term string, bound uint32) []byte {
	return binary.BigEndian.AppendUint32(termPrefix(pTail, term), bound)
}

// putTail adds to b the writes that store es (sorted, fewer than
// maxBlock) as term's tail chunks, given the chunks stored (by key):
// a chunk written unchanged is skipped, a stored one no longer there
// deleted.
func putTail(b *leveldb.Batch, term string, es []entry, stored map[string][]byte) {
	keep := map[string]bool{}
	for len(es) > 0 {
		n := min(len(es), tailChunk)
		bound := uint32(tailBound)
		if n == tailChunk {
			bound = es[n-1].num
		}
		k, v := tailKey(term, bound), appendBlock(nil, es[:n])
		keep[string(k)] = true
		if old, ok := stored[string(k)]; !ok || !bytes.Equal(old, v) {
			b.Put(k, v)
		}
		es = es[n:]
	}
	for k := range stored {
		if !keep[k] {
			b.Delete([]byte(k))
		}
	}
}

// indexKey is the key of term's full block of bound bound in its index.
func indexKey(term string, bound uint32) []byte {
	return binary.BigEndian.AppendUint32(termPrefix(pIndex, term), bound)
}

// fullKey is the key of term's full block of bound bound.
func fullKey(term string, bound uint32) []byte {
	b := make([]byte, 0, 1+4+len(term))
	b = append(b, pFull)
	b = binary.BigEndian.AppendUint32(b, bound)
	return append(b, term...)
}

// fullKeyTerm returns the term and bound of a full block's key.
func fullKeyTerm(k []byte) (term []byte, bound uint32, ok bool) {
	if len(k) < 1+4+1 || k[0] != pFull {
		return nil, 0, false
	}
	return k[5:], binary.BigEndian.Uint32(k[1:5]), true
}

// prefixedTerm returns the term of a tail or index key.
func prefixedTerm(k []byte) ([]byte, bool) {
	if len(k) < 2 {
		return nil, false
	}
	switch k[0] {
	case pTail, pIndex:
		if len(k) >= 1+1+1+4 && k[len(k)-5] == 0 {
			return k[1 : len(k)-5], true
		}
	}
	return nil, false
}

// kv is what reads blocks: the database or a snapshot of it.
type kv interface {
	Get(key []byte, ro *opt.ReadOptions) ([]byte, error)
	NewIterator(slice *util.Range, ro *opt.ReadOptions) iterator.Iterator
}

// termBlocks calls fn with each of term's blocks in r, in bound order:
// its full blocks, then its tail's chunks (the open one under
// tailBound). The value is valid during the call.
func termBlocks(r kv, term string, fn func(bound uint32, v []byte) error) error {
	prefix := termPrefix(pIndex, term)
	it := r.NewIterator(util.BytesPrefix(prefix), nil)
	defer it.Release()
	for it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+4 {
			continue
		}
		bound := binary.BigEndian.Uint32(k[len(prefix):])
		v, err := r.Get(fullKey(term, bound), nil)
		if errors.Is(err, leveldb.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(bound, v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	tp := termPrefix(pTail, term)
	ti := r.NewIterator(util.BytesPrefix(tp), nil)
	defer ti.Release()
	for ti.Next() {
		k := ti.Key()
		if len(k) != len(tp)+4 {
			continue
		}
		if err := fn(binary.BigEndian.Uint32(k[len(tp):]), ti.Value()); err != nil {
			return err
		}
	}
	return ti.Error()
}

// eachTerm calls fn with each term that has blocks in r, in key order:
// the terms of the index and of the tails, merged.
func eachTerm(r kv, fn func(term []byte) error) error {
	xi := r.NewIterator(util.BytesPrefix([]byte{pIndex}), nil)
	defer xi.Release()
	ti := r.NewIterator(util.BytesPrefix([]byte{pTail}), nil)
	defer ti.Release()
	next := func(it iterator.Iterator, last []byte) []byte {
		for it.Next() {
			if t, ok := prefixedTerm(it.Key()); ok && (last == nil || !bytes.Equal(t, last)) {
				return t
			}
		}
		return nil
	}
	var last []byte
	x := next(xi, nil)
	t := next(ti, nil)
	for x != nil || t != nil {
		var cur []byte
		switch {
		case t == nil || (x != nil && bytes.Compare(x, t) < 0):
			cur = x
		default:
			cur = t
		}
		if last == nil || !bytes.Equal(cur, last) {
			last = append(last[:0], cur...)
			if err := fn(last); err != nil {
				return err
			}
		}
		if x != nil && bytes.Equal(x, last) {
			x = next(xi, last)
		}
		if t != nil && bytes.Equal(t, last) {
			t = next(ti, last)
		}
	}
	if err := xi.Error(); err != nil {
		return err
	}
	return ti.Error()
}

// appendBlock encodes es (num ascending and distinct, not empty) as a
// block value.
func appendBlock(b []byte, es []entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(es)))
	b = binary.AppendUvarint(b, uint64(es[0].num))
	prev := uint32(0)
	for i, e := range es {
		if i > 0 {
			b = binary.AppendUvarint(b, uint64(e.num-prev))
		}
		prev = e.num
		b = appendFreqs(b, e.tf, e.titleTF)
	}
	return b
}

// appendFreqs appends a term's frequencies: uvarint(tf<<1 | in title),
// then the title tf if in title.
func appendFreqs(b []byte, tf, titleTF uint32) []byte {
	flag := uint64(0)
	if titleTF > 0 {
		flag = 1
	}
	b = binary.AppendUvarint(b, uint64(tf)<<1|flag)
	if flag == 1 {
		b = binary.AppendUvarint(b, uint64(titleTF))
	}
	return b
}

// readFreqs reads what appendFreqs wrote.
func readFreqs(r *binread.Reader) (tf, titleTF uint32) {
	v := r.Uvarint()
	if v>>1 > math.MaxUint32 {
		r.Fail(binread.ErrRange)
		return 0, 0
	}
	tf = uint32(v >> 1)
	if v&1 == 1 {
		titleTF = r.Uint32()
		if titleTF == 0 {
			r.Fail(errors.New("title flag without a title count"))
		}
	}
	return tf, titleTF
}

// blockCount returns the number of entries a block value says it holds.
func blockCount(v []byte) int {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > maxBlock*4 {
		return 0
	}
	return int(n)
}

// decodeBlock decodes a block value of upper bound bound, appending to
// es. Numbers must ascend strictly within the bound and counts be sane.
func decodeBlock(es []entry, bound uint32, v []byte) ([]entry, error) {
	r := binread.New(v)
	n := r.Uvarint()
	if r.Err() == nil && (n == 0 || n > uint64(len(v))) {
		r.Fail(fmt.Errorf("block of %d entries", n))
	}
	num := r.Uvarint()
	for i := uint64(0); i < n && r.Err() == nil; i++ {
		if i > 0 {
			d := r.Uvarint()
			if d == 0 || num+d > uint64(bound) {
				r.Fail(errors.New("version numbers out of order"))
				break
			}
			num += d
		}
		tf, ttf := readFreqs(&r)
		if r.Err() == nil && num > uint64(bound) {
			r.Fail(fmt.Errorf("number %d past the block's bound %d", num, bound))
		}
		if r.Err() == nil && (tf == 0 || ttf > tf) {
			r.Fail(fmt.Errorf("counts tf %d title %d", tf, ttf))
		}
		es = append(es, entry{num: uint32(num), tf: tf, titleTF: ttf})
	}
	if r.Err() == nil && r.Len() != 0 {
		r.Fail(errors.New("trailing bytes"))
	}
	if r.Err() != nil {
		return es, fmt.Errorf("%w: block: %v", ErrBadPosting, r.Err())
	}
	return es, nil
}

// mergeEntries merges add (sorted by num, distinct) into old (the same):
// an entry of add replaces old's of its number. It returns the merged
// list, the entries added (new numbers) and whether anything changed;
// onChange, if set, is told each entry added (old nil) or changed.
func mergeEntries(old, add []entry, onChange func(old *entry, e entry)) (out []entry, added int, changed bool) {
	out = make([]entry, 0, len(old)+len(add))
	i, j := 0, 0
	for i < len(old) || j < len(add) {
		switch {
		case j == len(add) || (i < len(old) && old[i].num < add[j].num):
			out = append(out, old[i])
			i++
		case i == len(old) || add[j].num < old[i].num:
			out = append(out, add[j])
			added++
			changed = true
			if onChange != nil {
				onChange(nil, add[j])
			}
			j++
		default:
			if old[i] != add[j] {
				changed = true
				if onChange != nil {
					onChange(&old[i], add[j])
				}
			}
			out = append(out, add[j])
			i++
			j++
		}
	}
	return out, added, changed
}

// sortEntries sorts es by number, the last of equal numbers kept.
func sortEntries(es []entry) []entry {
	slices.SortStableFunc(es, func(a, b entry) int {
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	})
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && es[i+1].num == e.num {
			continue
		}
		out = append(out, e)
	}
	return out
}
