package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Key prefixes of the store's goleveldb database (format 2).
const (
	pMeta    = 'm' // m "format" → uvarint: the store's format
	pVersion = 'v' // version table by identity (versions.go)
	pNum     = 'n' // version table by local number (versions.go)
	pBlock   = 'b' // b term 0x00 bound(4) → a block of the term's postings (blocks.go)
	pDocs    = 'o' // o num(4) → from, to, docLen: the document table (docs.go)

	// Format 1, migrated at open (migrate.go).
	pPosting = 'p' // p term 0x00 key(20) from(8) → to, tf, titleTF, docLen, url
	pDoc     = 'd' // d key(20) from(8) → to, docLen, url
)

// storeFormat is the format this code writes; a store of a later one is
// refused rather than misread.
const storeFormat = 2

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
}

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
	db, err := leveldb.OpenFile(dir, &opt.Options{
		Filter:             filter.NewBloomFilter(10),
		BlockCacheCapacity: 8 * opt.MiB,
		WriteBuffer:        4 * opt.MiB,
	})
	if err != nil {
		return nil, fmt.Errorf("search store: %w", err)
	}
	s := &Store{db: db, docCache: map[int64]DocStats{}}
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
		if n <= 0 || f != storeFormat {
			return fmt.Errorf("%w: %d", ErrStoreFormat, f)
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

// count sets the counters from a scan of the blocks' keys and counts
// and the version table.
func (s *Store) count() error {
	s.postings, s.terms, s.docs = 0, 0, 0
	it := s.db.NewIterator(util.BytesPrefix([]byte{pBlock}), nil)
	var last []byte
	for it.Next() {
		t, _, ok := blockKeyTerm(it.Key())
		if !ok {
			continue
		}
		s.postings += int64(blockCount(it.Value()))
		if !bytes.Equal(t, last) {
			s.terms++
			last = append(last[:0], t...)
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return fmt.Errorf("search store: count: %w", err)
	}
	it = s.db.NewIterator(util.BytesPrefix([]byte{pDocs}), nil)
	defer it.Release()
	for it.Next() {
		s.docs++
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("search store: count: %w", err)
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

// Put stores postings (each checked; a bad one fails the call and stores
// nothing), merged with what is stored: a posting's version keeps the
// earliest end it was told (an end, once known, stays), its URL and
// length are the newest sent, and a posting's frequencies replace the
// stored ones of its identity (term, URL key, From). It returns once
// they are durable.
func (s *Store) Put(ctx context.Context, ps []Posting) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range ps {
		if err := p.Check(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var b leveldb.Batch
	d, err := s.write(&b, ps, nil)
	if err != nil {
		return err
	}
	if err := s.db.Write(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return fmt.Errorf("search store: put: %w", err)
	}
	s.apply(d)
	return nil
}

// delta is what a write adds to the counters, and whether it changed
// the document table.
type delta struct {
	postings, terms, docs int64
	docTable              bool
}

// apply adds d to the counters; the caller holds s.mu.
func (s *Store) apply(d delta) {
	s.postings += d.postings
	s.terms += d.terms
	s.docs += d.docs
	if d.docTable {
		s.gen++
		s.docCache = map[int64]DocStats{}
	}
}

// write adds to b the writes that store ps (checked) and document rows
// rows, and returns what they add. The caller holds s.mu and writes b.
func (s *Store) write(b *leveldb.Batch, ps []Posting, rows []DocRow) (delta, error) {
	var d delta
	ve := &versionEdits{s: s, m: map[vident]*edit{}}
	byTerm := map[string][]entry{}
	for _, p := range ps {
		e, err := ve.get(p.Key, p.From)
		if err != nil {
			return d, err
		}
		e.set(p.URL, p.To, p.DocLen, false)
		byTerm[p.Term] = append(byTerm[p.Term], entry{num: e.v.num, tf: p.TF, titleTF: p.TitleTF})
	}
	for _, r := range rows {
		e, err := ve.get(r.Key, r.From)
		if err != nil {
			return d, err
		}
		if !e.v.doc {
			d.docs++
		}
		e.set(r.URL, r.To, r.DocLen, true)
	}
	d.docTable = ve.write(b)
	if len(byTerm) == 0 {
		return d, nil
	}
	terms := make([]string, 0, len(byTerm))
	for t := range byTerm {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	it := s.db.NewIterator(util.BytesPrefix([]byte{pBlock}), nil)
	defer it.Release()
	for _, t := range terms {
		added, isNew, err := mergeTerm(it, b, t, sortEntries(byTerm[t]))
		if err != nil {
			return d, err
		}
		d.postings += int64(added)
		if isNew {
			d.terms++
		}
	}
	return d, it.Error()
}

// mergeTerm adds to b the writes that merge es (sorted, distinct) into
// term's blocks: the blocks es fall in are read, merged and written
// again in blocks of at most maxBlock, the last of them under the bound
// of the last read (tailBound for a term's first block). Appending newer
// versions thus rewrites only the term's last block. It returns the
// postings added and whether the term is new.
func mergeTerm(it iterator.Iterator, b *leveldb.Batch, term string, es []entry) (int, bool, error) {
	prefix := blockPrefix(term)
	lo, hi := es[0].num, es[len(es)-1].num
	isTerm := func() bool {
		k := it.Key()
		return len(k) == len(prefix)+4 && bytes.HasPrefix(k, prefix)
	}
	bound := func() uint32 { return binary.BigEndian.Uint32(it.Key()[len(prefix):]) }
	var old []entry
	var keys [][]byte
	last := uint32(tailBound)
	exists := false
	// The blocks from the one lo falls in to the one hi falls in.
	for ok := it.Seek(blockKey(term, lo)); ok && isTerm(); ok = it.Next() {
		exists = true
		n := len(old)
		var err error
		if old, err = decodeBlock(old, bound(), it.Value()); err != nil {
			return 0, false, fmt.Errorf("search store: term %q: %w", term, err)
		}
		if n > 0 && old[n].num <= old[n-1].num {
			return 0, false, fmt.Errorf("search store: term %q: %w: blocks overlap", term, ErrBadPosting)
		}
		keys = append(keys, bytes.Clone(it.Key()))
		if last = bound(); last >= hi {
			break
		}
	}
	if len(keys) == 0 {
		// No block at or past lo: a new term, or one whose last block a
		// purge emptied (its other blocks lie before lo and stay).
		exists = it.Seek(prefix) && isTerm()
	}
	if last < hi {
		// The term's blocks ended before hi (a purge emptied its last):
		// the blocks written now are its last.
		last = tailBound
	}
	merged, added, changed := mergeEntries(old, es)
	if !changed {
		return 0, !exists, nil
	}
	for _, k := range keys {
		b.Delete(k)
	}
	for len(merged) > 0 {
		n := min(len(merged), maxBlock)
		ub := merged[n-1].num
		if n == len(merged) {
			ub = last
		}
		b.Put(blockKey(term, ub), appendBlock(nil, merged[:n]))
		merged = merged[n:]
	}
	return added, !exists, nil
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
	err := s.scanTerm(q.Term, func(v version, e entry) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !v.liveAt(q.At) || (site != "" && !OnSite(v.url, site)) {
			return nil
		}
		out.DF++
		if len(want) > 0 && !want[v.key] {
			return nil
		}
		p := v.posting(q.Term, e)
		top.push(p, impact(p, q.AvgLen))
		return nil
	})
	if err != nil {
		return PostingList{}, fmt.Errorf("search store: postings: %w", err)
	}
	out.Postings = top.sorted()
	out.Complete = len(want) > 0 || int64(len(out.Postings)) == out.DF
	return out, nil
}

// scanTerm calls fn with each posting of term, as its version and entry,
// in version number order. A block or version that does not decode is
// skipped.
func (s *Store) scanTerm(term string, fn func(version, entry) error) error {
	prefix := blockPrefix(term)
	snap, err := s.db.GetSnapshot()
	if err != nil {
		return err
	}
	defer snap.Release()
	it := snap.NewIterator(util.BytesPrefix(prefix), nil)
	defer it.Release()
	vit := snap.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer vit.Release()
	var es []entry
	for it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+4 {
			continue
		}
		es, err = decodeBlock(es[:0], binary.BigEndian.Uint32(k[len(prefix):]), it.Value())
		if err != nil {
			continue
		}
		for _, e := range es {
			v, ok := lookup(vit, e.num)
			if !ok {
				continue
			}
			if err := fn(v, e); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return vit.Error()
}

// DeleteWhere deletes every posting and document row whose URL and
// version time (Unix ms) del selects, and returns how many postings went.
// It is how a purge reaches the index.
func (s *Store) DeleteWhere(ctx context.Context, del func(url string, from int64) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b leveldb.Batch
	gone := map[uint32]bool{}
	it := s.db.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	for it.Next() {
		v, err := decodeVersion(it.Key(), it.Value())
		if err == nil && del(v.url, v.from) {
			gone[v.num] = true
			b.Delete(bytes.Clone(it.Key()))
			b.Delete(identKey(v.key, v.from))
			b.Delete(docKey(v.num))
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("search store: delete: %w", err)
	}
	if len(gone) == 0 {
		return 0, ctx.Err()
	}
	n := 0
	it = s.db.NewIterator(util.BytesPrefix([]byte{pBlock}), nil)
	var es []entry
	for it.Next() {
		_, bound, ok := blockKeyTerm(it.Key())
		if !ok {
			continue
		}
		var err error
		if es, err = decodeBlock(es[:0], bound, it.Value()); err != nil {
			continue
		}
		kept := slices.DeleteFunc(es, func(e entry) bool { return gone[e.num] })
		if len(kept) == blockCount(it.Value()) {
			continue
		}
		n += blockCount(it.Value()) - len(kept)
		if len(kept) == 0 {
			b.Delete(bytes.Clone(it.Key()))
		} else {
			b.Put(bytes.Clone(it.Key()), appendBlock(nil, kept))
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("search store: delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.db.Write(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return 0, fmt.Errorf("search store: delete: %w", err)
	}
	s.gen++
	s.docCache = map[int64]DocStats{}
	return n, s.count()
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
	it := snap.NewIterator(util.BytesPrefix([]byte{pBlock}), nil)
	defer it.Release()
	vit := snap.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer vit.Release()
	var last, term string
	in := false
	var es []entry
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, bound, ok := blockKeyTerm(it.Key())
		if !ok {
			continue
		}
		if string(t) != last {
			last = string(t)
			term = last
			in = id.InHalfOpen(TermKey(term), from, to)
		}
		if !in {
			continue
		}
		if es, err = decodeBlock(es[:0], bound, it.Value()); err != nil {
			continue
		}
		for _, e := range es {
			v, ok := lookup(vit, e.num)
			if !ok {
				continue
			}
			if err := fn(v.posting(term, e)); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return vit.Error()
}
