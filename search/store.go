package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Key prefixes of the store's goleveldb database.
const (
	pPosting = 'p' // p term 0x00 key(20) from(8) → to, tf, titleTF, docLen, url
	pDoc     = 'd' // d key(20) from(8) → to, docLen: versions this node indexed as their URL's holder
)

// Store is a node's local posting store: the postings of the terms it
// holds, and the document table of the versions it indexed (for the
// collection statistics BM25 needs). Writes are synchronous goleveldb
// batches: a posting Put acknowledged survives a crash, and a crash
// mid-batch keeps all of the batch or none. Memory is bounded by
// goleveldb's buffers and the per-query limits. A Store is safe for
// concurrent use.
type Store struct {
	db *leveldb.DB

	mu       sync.Mutex // serializes read-merge-write of postings
	postings int64      // postings held
	terms    int64      // distinct terms held
	docs     int64      // document table rows
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

// OpenStore opens or creates the posting store in dir. It counts what
// it holds (one scan of the database).
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
	if err := s.count(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// count sets the counters from a scan of the database.
func (s *Store) count() error {
	it := s.db.NewIterator(nil, nil)
	defer it.Release()
	var last []byte
	for it.Next() {
		k := it.Key()
		switch k[0] {
		case pPosting:
			s.postings++
			if t, ok := postingTerm(k); ok && !bytes.Equal(t, last) {
				s.terms++
				last = append(last[:0], t...)
			}
		case pDoc:
			s.docs++
		}
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

func termPrefix(term string) []byte {
	b := make([]byte, 0, len(term)+2)
	b = append(b, pPosting)
	b = append(b, term...)
	return append(b, 0)
}

func postingKey(p Posting) []byte {
	b := termPrefix(p.Term)
	b = append(b, p.Key[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(p.From))
}

// postingTerm returns the term of a posting key.
func postingTerm(k []byte) ([]byte, bool) {
	if len(k) < 1+1+id.Size+8 {
		return nil, false
	}
	return k[1 : len(k)-1-id.Size-8], true
}

func encodeValue(p Posting) []byte {
	b := binary.AppendVarint(nil, p.To)
	b = binary.AppendUvarint(b, uint64(p.TF))
	b = binary.AppendUvarint(b, uint64(p.TitleTF))
	b = binary.AppendUvarint(b, uint64(p.DocLen))
	return append(b, p.URL...)
}

func decodePosting(k, v []byte) (Posting, error) {
	t, ok := postingTerm(k)
	if !ok {
		return Posting{}, fmt.Errorf("%w: key of %d bytes", ErrBadPosting, len(k))
	}
	p := Posting{Term: string(t)}
	copy(p.Key[:], k[len(k)-id.Size-8:])
	p.From = int64(binary.BigEndian.Uint64(k[len(k)-8:]))
	r := reader{b: v}
	p.To = r.varint()
	p.TF = r.u32()
	p.TitleTF = r.u32()
	p.DocLen = r.u32()
	if r.err != nil {
		return Posting{}, fmt.Errorf("%w: %v", ErrBadPosting, r.err)
	}
	p.URL = string(r.b)
	return p, nil
}

// merge returns the posting to keep when p arrives for a stored old: the
// newer data, except that an end, once known, stays (the earliest end
// wins: a version's range only ever closes).
func merge(old, p Posting) Posting {
	switch {
	case old.To != Open && p.To == Open:
		p.To = old.To
	case old.To != Open && old.To < p.To:
		p.To = old.To
	}
	return p
}

// Put stores postings (each checked; a bad one fails the call and stores
// nothing), merging each with the stored posting of its identity. It
// returns once they are durable.
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
	newTerms := map[string]bool{}
	added := int64(0)
	for _, p := range ps {
		k := postingKey(p)
		old, err := s.db.Get(k, nil)
		switch {
		case err == nil:
			op, derr := decodePosting(k, old)
			if derr == nil {
				p = merge(op, p)
			}
		case errors.Is(err, leveldb.ErrNotFound):
			added++
			if !newTerms[p.Term] {
				has, herr := s.hasTerm(p.Term)
				if herr != nil {
					return herr
				}
				newTerms[p.Term] = !has
			}
		default:
			return fmt.Errorf("search store: %w", err)
		}
		b.Put(k, encodeValue(p))
	}
	if err := s.db.Write(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return fmt.Errorf("search store: put: %w", err)
	}
	s.postings += added
	for _, n := range newTerms {
		if n {
			s.terms++
		}
	}
	return nil
}

// hasTerm reports whether any posting of term is stored.
func (s *Store) hasTerm(term string) (bool, error) {
	it := s.db.NewIterator(util.BytesPrefix(termPrefix(term)), nil)
	defer it.Release()
	ok := it.First()
	return ok, it.Error()
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
	it := s.db.NewIterator(util.BytesPrefix(termPrefix(q.Term)), nil)
	defer it.Release()
	n := 0
	for it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return PostingList{}, err
			}
		}
		p, err := decodePosting(it.Key(), it.Value())
		if err != nil || !p.Live(q.At) || (site != "" && !OnSite(p.URL, site)) {
			continue
		}
		out.DF++
		if len(want) > 0 && !want[p.Key] {
			continue
		}
		top.push(p, impact(p, q.AvgLen))
	}
	if err := it.Error(); err != nil {
		return PostingList{}, fmt.Errorf("search store: postings: %w", err)
	}
	out.Postings = top.sorted()
	out.Complete = len(want) > 0 || int64(len(out.Postings)) == out.DF
	return out, nil
}

// DeleteWhere deletes every posting and document row whose URL and
// version time (Unix ms) del selects, and returns how many postings went.
// It is how a purge reaches the index.
func (s *Store) DeleteWhere(ctx context.Context, del func(url string, from int64) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b leveldb.Batch
	n, docs := 0, 0
	it := s.db.NewIterator(nil, nil)
	for it.Next() {
		k, v := it.Key(), it.Value()
		switch k[0] {
		case pPosting:
			p, err := decodePosting(k, v)
			if err == nil && del(p.URL, p.From) {
				b.Delete(bytes.Clone(k))
				n++
			}
		case pDoc:
			d, err := decodeDoc(k, v)
			if err == nil && del(d.URL, d.From) {
				b.Delete(bytes.Clone(k))
				docs++
			}
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("search store: delete: %w", err)
	}
	if err := s.db.Write(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return 0, fmt.Errorf("search store: delete: %w", err)
	}
	s.gen++
	s.docCache = map[int64]DocStats{}
	s.terms, s.postings, s.docs = 0, 0, 0
	return n, s.count()
}

// Range calls fn with every posting whose term key lies in the ring
// interval (from, to]: what a node hands to a range's new holder.
func (s *Store) Range(ctx context.Context, from, to id.ID, fn func(Posting) error) error {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pPosting}), nil)
	defer it.Release()
	var last string
	in := false
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := decodePosting(it.Key(), it.Value())
		if err != nil {
			continue
		}
		if p.Term != last {
			last = p.Term
			in = id.InHalfOpen(TermKey(p.Term), from, to)
		}
		if in {
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return it.Error()
}
