package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Key prefixes of the store's goleveldb database (format 5), in key
// order: full blocks below, ascending, and identities above, newest
// first, grow with the versions at the ends of the key space; what a
// write rewrites lies between (versions.go).
const (
	pFull  = 'F' // F bound(4) term → a full block of the term's postings (blocks.go)
	pEnd   = 'e' // e num(4) → varint to: a version's end, past its row's (ends.go)
	pMeta  = 'm' // m "format" → uvarint: the store's format
	pNum   = 'n' // n num(4) → a version's row (versions.go)
	pIdent = 'z' // z ^from(8) key(20) → num(4): identities, newest first (versions.go)
	pIndex = 'x' // x term 0x00 bound(4) → nothing: a term's full blocks
	pTail  = 't' // t term 0x00 bound(4) → a chunk of the term's tail, its open block (blocks.go)
	pDocs  = 'o' // o num(4) → from, to, docLen: the document table (docs.go)

	// Formats 2 to 4, moved at open (migrate.go).
	pBlock    = 'b' // b term 0x00 bound(4) → a block of the term's postings (2, 3)
	pVersion4 = 'v' // v key(20) from(8) → num(4): identities (2 to 4)

	// Format 1, migrated at open (migrate.go).
	pPosting = 'p' // p term 0x00 key(20) from(8) → to, tf, titleTF, docLen, url
	pDoc     = 'd' // d key(20) from(8) → to, docLen, url
)

// storeFormat is the format this code writes; a store of a later one is
// refused rather than misread. Format 3 is format 2 with a sum of its
// entries in each version row written since (entrySum): a format-2
// store is format 3 as it is, its rows' sums unknown. Format 4 keeps a
// term's tail apart from its full blocks (blocks.go); a store of
// format 2 or 3 has its blocks moved at open (migrateBlocks). Format 5
// writes an old version's end apart from its row (ends.go), keys
// identities newest first (versions.go) and keeps a term's tail in
// chunks (blocks.go); a store of an earlier format has its identities
// and tails moved at open (migrateVersions, migrateTails).
const storeFormat = 5

var formatKey = []byte{pMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// Store is a node's local posting store: the postings of the terms it
// holds, and the document table of the versions it indexed (for the
// collection statistics BM25 needs). A version is written once, in the
// version table, under a local number; a term's postings are blocks of
// those numbers and the term's frequencies (blocks.go, versions.go).
// Writes are synchronous goleveldb batches: a posting Put acknowledged
// survives a crash, and a crash mid-batch keeps all of the batch or
// none. Memory is bounded by goleveldb's buffers, a write's own postings
// and the per-query limits. A Store is safe for concurrent use.
type Store struct {
	db *leveldb.DB

	mu       sync.Mutex // serializes read-merge-write of postings and versions
	next     uint64     // the next version number
	postings int64      // postings held
	terms    int64      // distinct terms held
	docs     int64      // document rows
	gen      uint64     // bumped by every write of the document table
	docCache map[int64]DocStats
	ends     int64 // pending ends (ends.go)
	foldMin  int64 // the fewest pending ends a fold takes (foldMinEnds)
	foldFrac int64 // a fold takes next/foldFrac pending ends (foldFraction)
	folds    int64 // folds run since open
	// blocksRead counts the blocks queries and Range decoded.
	blocksRead atomic.Int64
	// writes counts the batches written (Writes).
	writes atomic.Uint64
}

// dbWrite writes b and counts it (Writes), written or not.
func (s *Store) dbWrite(b *leveldb.Batch, o *opt.WriteOptions) error {
	err := s.db.Write(b, o)
	s.writes.Add(1)
	return err
}

// Writes returns how many batches the store has written since it
// opened: what it holds (Range, Postings) is as it was when the count
// was last read if the count has not changed since. A caller that reads
// Writes, then the store, may keep what it read for as long as Writes
// returns the same count.
func (s *Store) Writes() uint64 { return s.writes.Load() }

// DocStats are collection statistics as of one time: the live indexed
// versions and their summed length in tokens.
type DocStats struct {
	N      int64
	SumLen int64
}

// AvgLen returns the mean document length, 1 for an empty collection.
func (d DocStats) AvgLen() float64 {
	if d.N == 0 || d.SumLen == 0 {
		return 1
	}
	return float64(d.SumLen) / float64(d.N)
}

// ErrStoreFormat reports a store written in a format this code does not
// know (a later one).
var ErrStoreFormat = errors.New("search store: unknown format")

// OpenStore opens or creates the posting store in dir. A store of the
// first format (a posting a row) is migrated in place, in synced batches
// that each convert some postings and delete them (a crash resumes it at
// the next open). It counts what it holds (one scan of the database).
func OpenStore(dir string) (*Store, error) {
	db, err := leveldb.OpenFile(dir, storeOptions())
	if err != nil {
		return nil, fmt.Errorf("search store: %w", err)
	}
	s := &Store{db: db, docCache: map[int64]DocStats{}, foldMin: foldMinEnds, foldFrac: foldFraction}
	if err := s.open(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// open checks the format, migrates a first-format store and counts.
func (s *Store) open() error {
	if err := s.setNext(); err != nil {
		return err
	}
	v, err := s.db.Get(formatKey, nil)
	switch {
	case err == nil:
		f, n := binary.Uvarint(v)
		if n <= 0 || f < 2 || f > storeFormat {
			return fmt.Errorf("%w: %d", ErrStoreFormat, f)
		}
		if f < storeFormat {
			if f < 4 {
				if err := s.migrateBlocks(); err != nil {
					return err
				}
			}
			if err := s.migrateTails(); err != nil {
				return err
			}
			if err := s.migrateVersions(); err != nil {
				return err
			}
			if err := s.db.Put(formatKey, binary.AppendUvarint(nil, storeFormat), &opt.WriteOptions{Sync: true}); err != nil {
				return fmt.Errorf("search store: %w", err)
			}
		}
	case errors.Is(err, leveldb.ErrNotFound):
		if err := s.migrate(); err != nil {
			return err
		}
		if err := s.db.Put(formatKey, binary.AppendUvarint(nil, storeFormat), &opt.WriteOptions{Sync: true}); err != nil {
			return fmt.Errorf("search store: %w", err)
		}
	default:
		return fmt.Errorf("search store: %w", err)
	}
	return s.count()
}

// setNext sets the next version number past the highest stored.
func (s *Store) setNext() error {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer it.Release()
	s.next = 0
	if it.Last() && len(it.Key()) == 5 {
		s.next = uint64(binary.BigEndian.Uint32(it.Key()[1:])) + 1
	}
	return it.Error()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// count sets the counters from a scan of the blocks' counts, the terms
// of the index and tails, and the document table.
func (s *Store) count() error {
	s.postings, s.terms, s.docs, s.ends = 0, 0, 0, 0
	for _, p := range []byte{pFull, pTail} {
		it := s.db.NewIterator(util.BytesPrefix([]byte{p}), nil)
		for it.Next() {
			s.postings += int64(blockCount(it.Value()))
		}
		it.Release()
		if err := it.Error(); err != nil {
			return fmt.Errorf("search store: count: %w", err)
		}
	}
	if err := eachTerm(s.db, func([]byte) error { s.terms++; return nil }); err != nil {
		return fmt.Errorf("search store: count: %w", err)
	}
	for _, c := range []struct {
		p byte
		n *int64
	}{{pDocs, &s.docs}, {pEnd, &s.ends}} {
		it := s.db.NewIterator(util.BytesPrefix([]byte{c.p}), nil)
		for it.Next() {
			*c.n++
		}
		it.Release()
		if err := it.Error(); err != nil {
			return fmt.Errorf("search store: count: %w", err)
		}
	}
	return nil
}

// Counts are what a store holds.
type Counts struct {
	Terms    int64 `json:"terms"`
	Postings int64 `json:"postings"`
	Docs     int64 `json:"docs"`
}

// Counts returns what the store holds.
func (s *Store) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Counts{Terms: s.terms, Postings: s.postings, Docs: s.docs}
}

// PostingQuery asks a holder for a term's postings live at one time.
type PostingQuery struct {
	Term string
	At   int64  // Unix ms
	Site string // only URLs of this host (and its subdomains); "" for all
	// Keys, if set, asks only for the postings of these URL keys (the
	// other terms' candidates); DF then still counts every live posting.
	Keys []id.ID
	// Limit bounds the postings returned, best impact first (0: 1,000).
	Limit int
	// AvgLen is the collection's mean document length, for the impact
	// order (0: 1,000 tokens).
	AvgLen float64
}

// PostingList is a holder's answer: the term's document frequency at
// the time asked and its postings, best impact first; Complete says
// every live posting is in it.
type PostingList struct {
	DF       int64
	Postings []Posting
	Complete bool
}

// DefaultLimit is PostingQuery.Limit's default.
const DefaultLimit = 1000

// Postings answers a PostingQuery from the postings this store holds.
func (s *Store) Postings(ctx context.Context, q PostingQuery) (PostingList, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	if q.AvgLen <= 0 {
		q.AvgLen = 1000
	}
	want := map[id.ID]bool{}
	for _, k := range q.Keys {
		want[k] = true
	}
	site := strings.ToLower(q.Site)
	var out PostingList
	top := newTopK(q.Limit)
	n := 0
	err := s.scanTerm(q.Term, func(v version, url []byte, e entry) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !v.liveAt(q.At) || (site != "" && !OnSite(string(url), site)) {
			return nil
		}
		out.DF++
		if len(want) > 0 && !want[v.key] {
			return nil
		}
		p := v.posting(q.Term, e) // its URL, not yet: most are not kept
		score := impact(p, q.AvgLen)
		if len(top.h) >= top.k && !before(scored{p, score}, top.h[0]) {
			return nil
		}
		p.URL = string(url)
		top.push(p, score)
		return nil
	})
	if err != nil {
		return PostingList{}, fmt.Errorf("search store: postings: %w", err)
	}
	out.Postings = top.sorted()
	out.Complete = len(want) > 0 || int64(len(out.Postings)) == out.DF
	return out, nil
}

// scanTerm calls fn with each posting of term, as its version (its URL
// apart, as bytes valid during the call) and entry, in version number
// order. A block or version that does not decode is skipped.
func (s *Store) scanTerm(term string, fn func(version, []byte, entry) error) error {
	snap, err := s.db.GetSnapshot()
	if err != nil {
		return err
	}
	defer snap.Release()
	vit := snap.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer vit.Release()
	ends := newEndCursor(snap)
	defer ends.release()
	var es []entry
	err = termBlocks(snap, term, func(bound uint32, v []byte) error {
		s.blocksRead.Add(1)
		var err error
		if es, err = decodeBlock(es[:0], bound, v); err != nil {
			return nil
		}
		for _, e := range es {
			v, url, ok := lookupRaw(vit, e.num)
			if !ok {
				continue
			}
			if err := fn(ends.withEnd(v), url, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := ends.err(); err != nil {
		return err
	}
	return vit.Error()
}

// Range calls fn with every posting whose term key lies in the ring
// interval (from, to]: what a node hands to a range's new holder. The
// postings of a term come together, in no particular order of terms.
func (s *Store) Range(ctx context.Context, from, to id.ID, fn func(Posting) error) error {
	snap, err := s.db.GetSnapshot()
	if err != nil {
		return fmt.Errorf("search store: range: %w", err)
	}
	defer snap.Release()
	vit := snap.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer vit.Release()
	ends := newEndCursor(snap)
	defer ends.release()
	var es []entry
	err = eachTerm(snap, func(t []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		term := string(t)
		if !id.InHalfOpen(TermKey(term), from, to) {
			return nil
		}
		return termBlocks(snap, term, func(bound uint32, v []byte) error {
			var err error
			if es, err = decodeBlock(es[:0], bound, v); err != nil {
				return nil
			}
			for _, e := range es {
				v, ok := lookup(vit, e.num)
				if !ok {
					continue
				}
				if err := fn(ends.withEnd(v).posting(term, e)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := ends.err(); err != nil {
		return err
	}
	return vit.Error()
}
