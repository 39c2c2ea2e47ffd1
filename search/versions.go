package search

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
)

// The version table: every version a store holds postings of, or
// indexed as its URL's holder (a document row), written once and
// numbered locally. Its number is what the term's blocks hold; its URL,
// key, live range, length and document flag are here, so a version's
// end is one small write however many postings it has: in the end
// table (ends.go), when the rest of its row is unchanged.
//
//	z ^from(8) key(20) → num(4)
//	n num(4)           → key(20) varint(from) varint(to) uvarint(docLen) flags(1) url
//	o num(4)           → varint(from) varint(to) uvarint(docLen): document rows only
//
// Numbers only grow, and identities are keyed by capture time, newest
// first, at the top of the key space: a crawl's new identities are
// written just above what a write rewrites (tails, rows, ends), and the
// older ones lie outside the key range of every write, so goleveldb's
// compactions of the newer tables leave them be. The o rows repeat what the collection statistics need of
// the document table, so that DocStats reads a few bytes a document,
// not every row. An n or o row's end may be later than the version's:
// its e row's, if any, is the earlier.

// version is one row of the version table.
type version struct {
	num    uint32
	key    id.ID
	url    string
	from   int64
	to     int64
	docLen uint32
	doc    bool // a document row: this node indexed it as its URL's holder
	// sum is what the store holds of the version's entries (format 3;
	// unknown in a row written before).
	sum entrySum
}

// Flags of a version row: a document row; a row with the sum of its
// entries (written between the flags and the URL).
const (
	flagDoc = 1
	flagSum = 2
)

// entrySum sums a version's entries in a store: how many, and the XOR
// of a 64-bit hash of each one's term and frequencies. A write that
// sends a stored version's entries again finds them all there
// unchanged, without reading the blocks they lie in, when its own sum
// of them is the stored one (a crawl's ended version, a backfill or
// sync sending what a holder has).
type entrySum struct {
	known bool
	n     uint32
	x     uint64
}

// entryHash is the hash an entrySum adds up for one entry of term.
func entryHash(term string, e entry) uint64 {
	// FNV-1a over the term, a separator and the frequencies.
	h := uint64(14695981039346656037)
	for i := 0; i < len(term); i++ {
		h = (h ^ uint64(term[i])) * 1099511628211
	}
	for _, v := range [3]uint32{0xffffffff, e.tf, e.titleTF} {
		for range 4 {
			h = (h ^ uint64(v&0xff)) * 1099511628211
			v >>= 8
		}
	}
	return h
}

// add counts one more entry of term.
func (s *entrySum) add(term string, e entry) {
	s.x ^= entryHash(term, e)
	s.n++
}

// replace counts term's entry e in place of old.
func (s *entrySum) replace(term string, old, e entry) {
	s.x ^= entryHash(term, old) ^ entryHash(term, e)
}

// identKey is the key of version (k, from) in the identity table: the
// capture time's bits inverted, so that the newest sort first.
func identKey(k id.ID, from int64) []byte {
	b := make([]byte, 0, 1+8+id.Size)
	b = append(b, pIdent)
	b = binary.BigEndian.AppendUint64(b, ^uint64(from))
	return append(b, k[:]...)
}

func numKey(num uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pNum}, num)
}

func docKey(num uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pDocs}, num)
}

func (v version) docValue() []byte {
	b := binary.AppendVarint(nil, v.from)
	b = binary.AppendVarint(b, v.to)
	return binary.AppendUvarint(b, uint64(v.docLen))
}

func (v version) value() []byte {
	b := make([]byte, 0, id.Size+24+len(v.url))
	b = append(b, v.key[:]...)
	b = binary.AppendVarint(b, v.from)
	b = binary.AppendVarint(b, v.to)
	b = binary.AppendUvarint(b, uint64(v.docLen))
	flags := byte(0)
	if v.doc {
		flags |= flagDoc
	}
	if v.sum.known {
		flags |= flagSum
	}
	b = append(b, flags)
	if v.sum.known {
		b = binary.BigEndian.AppendUint64(b, v.sum.x)
		b = binary.AppendUvarint(b, uint64(v.sum.n))
	}
	return append(b, v.url...)
}

// decodeVersion decodes a row of the n table.
func decodeVersion(k, val []byte) (version, error) {
	v, url, err := decodeVersionRaw(k, val)
	v.url = string(url)
	return v, err
}

// decodeVersionRaw decodes a row of the n table but its URL, returned as
// the bytes of val it lies in.
func decodeVersionRaw(k, val []byte) (version, []byte, error) {
	if len(k) != 1+4 || k[0] != pNum {
		return version{}, nil, fmt.Errorf("%w: version key of %d bytes", ErrBadPosting, len(k))
	}
	v := version{num: binary.BigEndian.Uint32(k[1:])}
	r := binread.New(val)
	r.Copy(v.key[:])
	v.from = r.Varint()
	v.to = r.Varint()
	v.docLen = r.Uint32()
	if r.Err() == nil && r.Len() == 0 {
		r.Fail(errors.New("no flags"))
	}
	if r.Err() != nil {
		return version{}, nil, fmt.Errorf("%w: version: %v", ErrBadPosting, r.Err())
	}
	flags := r.Byte()
	v.doc = flags&flagDoc != 0
	if flags&flagSum != 0 {
		var x [8]byte
		r.Copy(x[:])
		v.sum = entrySum{known: true, x: binary.BigEndian.Uint64(x[:]), n: r.Uint32()}
		if r.Err() != nil {
			return version{}, nil, fmt.Errorf("%w: version: %v", ErrBadPosting, r.Err())
		}
	}
	return v, r.Rest(), nil
}

// liveAt reports whether the version is live at Unix ms at.
func (v version) liveAt(at int64) bool {
	return v.from <= at && (v.to == Open || at < v.to)
}

// posting returns the posting of e's term in version v.
func (v version) posting(term string, e entry) Posting {
	return Posting{Term: term, Key: v.key, URL: v.url, From: v.from, To: v.to, TF: e.tf, TitleTF: e.titleTF, DocLen: v.docLen}
}

// mergeEnd returns a version's end once told end: an end, once known,
// stays, and the earliest known end wins (a range only ever closes).
func mergeEnd(old, end int64) int64 {
	switch {
	case old == Open:
		return end
	case end == Open || old < end:
		return old
	}
	return end
}

// edit is a version as a write finds it and leaves it.
type edit struct {
	v     version // with its pending end merged in
	orig  version // v as found
	row   version // its row as stored, if found
	found bool    // stored before the write
	ended bool    // found with a pending end (an e row)
	dirty bool    // to be written
}

// versionEdits resolves the versions one write touches, reading each
// stored one once.
type versionEdits struct {
	s  *Store
	m  map[vident]*edit
	in []*edit // in order of first touch
	// The version table is read through iterators, not Gets (see
	// blockIters), made at the first get; release releases them.
	ids, nums iterator.Iterator
	ends      *endCursor
}

// release releases the iterators gets made.
func (ve *versionEdits) release() {
	if ve.ids != nil {
		ve.ids.Release()
		ve.nums.Release()
		ve.ends.release()
	}
}

// lookupKey returns the value of key in it (valid until it moves), or
// ErrNotFound.
func lookupKey(it iterator.Iterator, key []byte) ([]byte, error) {
	if it.Seek(key) && bytes.Equal(it.Key(), key) {
		return it.Value(), nil
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return nil, leveldb.ErrNotFound
}

type vident struct {
	key  id.ID
	from int64
}

// errFullNumbers reports a store that has numbered 2³² versions.
var errFullNumbers = errors.New("search store: version numbers exhausted")

// get returns the edit of version (key, from), numbering it if new.
// The caller holds s.mu.
func (ve *versionEdits) get(key id.ID, from int64) (*edit, error) {
	return ve.resolve(key, from, true)
}

// find returns the edit of version (key, from), or nil if the store
// does not hold it. The caller holds s.mu.
func (ve *versionEdits) find(key id.ID, from int64) (*edit, error) {
	return ve.resolve(key, from, false)
}

// resolve returns the edit of version (key, from); a version the store
// does not hold is numbered if add, else nil.
func (ve *versionEdits) resolve(key id.ID, from int64, add bool) (*edit, error) {
	if e, ok := ve.m[vident{key, from}]; ok {
		return e, nil
	}
	e := &edit{}
	if ve.ids == nil {
		ve.ids = ve.s.db.NewIterator(util.BytesPrefix([]byte{pIdent}), nil)
		ve.nums = ve.s.db.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
		ve.ends = newEndCursor(ve.s.db)
	}
	nb, err := lookupKey(ve.ids, identKey(key, from))
	switch {
	case err == nil && len(nb) == 4:
		num := binary.BigEndian.Uint32(nb)
		val, gerr := lookupKey(ve.nums, numKey(num))
		if gerr != nil {
			return nil, fmt.Errorf("search store: version %d: %w", num, gerr)
		}
		v, derr := decodeVersion(numKey(num), val)
		if derr != nil {
			return nil, derr
		}
		e.row, e.v, e.found = v, v, true
		if to, ok := ve.ends.end(num); ok {
			e.v.to, e.ended = mergeEnd(v.to, to), true
		}
		e.orig = e.v
	case err == nil:
		return nil, fmt.Errorf("%w: version number of %d bytes", ErrBadPosting, len(nb))
	case errors.Is(err, leveldb.ErrNotFound) && !add:
		return nil, nil
	case errors.Is(err, leveldb.ErrNotFound):
		if ve.s.next > math.MaxUint32 {
			return nil, errFullNumbers
		}
		e.v = version{num: uint32(ve.s.next), key: key, from: from, to: Open, sum: entrySum{known: true}}
		ve.s.next++
		e.dirty = true
	default:
		return nil, fmt.Errorf("search store: %w", err)
	}
	ve.m[vident{key, from}] = e
	ve.in = append(ve.in, e)
	return e, nil
}

// set merges what a posting or document row says of its version.
func (e *edit) set(url string, to int64, docLen uint32, doc bool) {
	nv := e.v
	nv.url, nv.docLen = url, docLen
	nv.to = mergeEnd(e.v.to, to)
	nv.doc = e.v.doc || doc
	if nv != e.v {
		e.v, e.dirty = nv, true
	}
}

// write adds the changed rows to b, and to d whether a document row
// changed and the pending ends added or folded. A new version's rows
// are written whole; a stored version whose row changed but for its
// end is written again, its pending end folded in; a stored version
// whose end alone changed has it written to the end table.
func (ve *versionEdits) write(b *leveldb.Batch, d *delta) {
	for _, e := range ve.in {
		if !e.dirty {
			continue
		}
		if e.v.doc || e.orig.doc {
			d.docChanges = append(d.docChanges, docChange{old: e.orig, new: e.v})
		}
		if e.found {
			row := e.v
			row.to = e.row.to
			if row == e.row {
				b.Put(endKey(e.v.num), binary.AppendVarint(nil, e.v.to))
				if !e.ended {
					d.ends++
				}
				d.docTable = d.docTable || e.v.doc
				continue
			}
			if e.ended {
				b.Delete(endKey(e.v.num))
				d.ends--
			}
		} else {
			b.Put(identKey(e.v.key, e.v.from), binary.BigEndian.AppendUint32(nil, e.v.num))
		}
		b.Put(numKey(e.v.num), e.v.value())
		if e.v.doc {
			b.Put(docKey(e.v.num), e.v.docValue())
			d.docTable = true
		}
	}
}

// nextRows is how far on a row lookup moves by Next rather than Seek: a
// Seek of goleveldb's merged iterator seeks every table and level (5-10
// µs at 50 K versions, BenchmarkQueryScale), a Next moves one of them.
const nextRows = 32

// lookup reads version num through it (an iterator over the n table).
// Callers ask in ascending order where they can: a number up to
// nextRows past the iterator's is reached by Next, cheaper than a Seek.
func lookup(it iterator.Iterator, num uint32) (version, bool) {
	v, url, ok := lookupRaw(it, num)
	v.url = string(url)
	return v, ok
}

// lookupRaw is lookup but for the URL, returned as bytes valid until it
// moves.
func lookupRaw(it iterator.Iterator, num uint32) (version, []byte, bool) {
	ok := false
	if it.Valid() && len(it.Key()) == 5 {
		if cur := binary.BigEndian.Uint32(it.Key()[1:]); cur < num && num-cur <= nextRows {
			ok = true
			for ok && binary.BigEndian.Uint32(it.Key()[1:]) < num {
				ok = it.Next() && len(it.Key()) == 5
			}
		}
	}
	k := numKey(num)
	if !ok && !it.Seek(k) {
		return version{}, nil, false
	}
	if string(it.Key()) != string(k) {
		return version{}, nil, false
	}
	v, url, err := decodeVersionRaw(it.Key(), it.Value())
	return v, url, err == nil
}
