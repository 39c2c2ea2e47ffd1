package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

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
