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
	return s.commit(ps, nil, "put")
}

// commit writes postings and document rows in one synced batch and adds
// what they change to the counters; what names the call in its error.
func (s *Store) commit(ps []Posting, rows []DocRow, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b leveldb.Batch
	d, err := s.write(&b, ps, rows)
	if err != nil {
		return err
	}
	if err := s.dbWrite(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return fmt.Errorf("search store: %s: %w", what, err)
	}
	return s.applyAndFold(d)
}

// applyAndFold adds what a write did to the counters and folds the
// pending ends if they reached foldAt; the caller holds s.mu.
func (s *Store) applyAndFold(d delta) error {
	s.apply(d)
	if s.ends < s.foldAt() {
		return nil
	}
	n, err := s.foldEnds()
	s.ends -= n
	s.folds++
	return err
}

// End ends each version of ends that the store holds postings of (its
// row records entries, or was written before rows did) at its To, as a
// Put of all its postings with that end would (the earliest known end
// wins), in one synced batch, and returns the others, untouched. It is
// how a changed page's previous version ends without being analyzed
// again (Ender).
func (s *Store) End(ctx context.Context, ends []End) ([]End, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, e := range ends {
		if e.To == Open || e.To < e.From {
			return nil, fmt.Errorf("%w: end of %q from %d at %d", ErrBadPosting, e.URL, e.From, e.To)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ve := &versionEdits{s: s, m: map[vident]*edit{}}
	defer ve.release()
	var unknown []End
	for _, en := range ends {
		e, err := ve.find(en.Key, en.From)
		if err != nil {
			return nil, err
		}
		if e == nil || (e.v.sum.known && e.v.sum.n == 0) {
			unknown = append(unknown, en)
			continue
		}
		e.set(e.v.url, en.To, e.v.docLen, false)
	}
	var b leveldb.Batch
	var d delta
	ve.write(&b, &d)
	if b.Len() == 0 {
		return unknown, nil
	}
	if err := s.dbWrite(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return nil, fmt.Errorf("search store: end: %w", err)
	}
	return unknown, s.applyAndFold(d)
}

// delta is what a write adds to the counters, and whether it changed
// the document table.
type delta struct {
	postings, terms, docs int64
	ends                  int64 // pending ends (ends.go)
	docTable              bool
	docChanges            []docChange
}

// docChange is a version as a write found it and leaves it, if either
// is a document row.
type docChange struct{ old, new version }

// addTo adds the change to st, the statistics as of at.
func (c docChange) addTo(st *DocStats, at int64) {
	if c.old.doc && c.old.liveAt(at) {
		st.N--
		st.SumLen -= int64(c.old.docLen)
	}
	if c.new.doc && c.new.liveAt(at) {
		st.N++
		st.SumLen += int64(c.new.docLen)
	}
}

// apply adds d to the counters; the caller holds s.mu.
func (s *Store) apply(d delta) {
	s.postings += d.postings
	s.terms += d.terms
	s.docs += d.docs
	s.ends += d.ends
	if d.docTable {
		// The cached statistics follow the rows changed, each as of
		// the end of its hour (DocStats); a count running meanwhile
		// is not cached.
		s.gen++
		for g, st := range s.docCache {
			for _, c := range d.docChanges {
				c.addTo(&st, g+docStatsGrain-1)
			}
			s.docCache[g] = st
		}
	}
}

// write adds to b the writes that store ps (checked) and document rows
// rows, and returns what they add. The caller holds s.mu and writes b.
//
// A stored version whose entries in ps add up to the sum its row keeps
// (entrySum: the same terms and frequencies, all of them) has them all
// stored unchanged: they are not merged, and only its row can change
// (a crawl's ended version: its end). Other entries are merged into
// their blocks and their versions' sums follow.
func (s *Store) write(b *leveldb.Batch, ps []Posting, rows []DocRow) (delta, error) {
	var d delta
	ve := &versionEdits{s: s, m: map[vident]*edit{}}
	defer ve.release()
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
	if len(byTerm) > 0 {
		if err := s.writeEntries(b, ve, byTerm, &d); err != nil {
			return d, err
		}
	}
	ve.write(b, &d)
	return d, nil
}

// writeEntries adds to b the writes that merge byTerm's entries into
// their blocks, but those of stored versions that hold them all
// unchanged, and updates the versions' sums in ve.
func (s *Store) writeEntries(b *leveldb.Batch, ve *versionEdits, byTerm map[string][]entry, d *delta) error {
	byNum := make(map[uint32]*edit, len(ve.in))
	for _, e := range ve.in {
		byNum[e.v.num] = e
	}
	terms := make([]string, 0, len(byTerm))
	sent := map[uint32]*entrySum{} // what this write says of each version's entries
	for t, es := range byTerm {
		terms = append(terms, t)
		es = sortEntries(es)
		byTerm[t] = es
		for _, e := range es {
			if sent[e.num] == nil {
				sent[e.num] = &entrySum{known: true}
			}
			sent[e.num].add(t, e)
		}
	}
	held := map[uint32]bool{}
	for num, sum := range sent {
		if e := byNum[num]; e.found && e.v.sum == *sum {
			held[num] = true
		}
	}
	slices.Sort(terms)
	// Blocks are read through iterators, not Gets: goleveldb charges a
	// Get that consults two tables a "seek" and compacts a table that
	// has had size/16 KiB of them, which a batch's tails did at once.
	it := s.db.NewIterator(util.BytesPrefix([]byte{pIndex}), nil)
	defer it.Release()
	rd := blockIters{
		tails: s.db.NewIterator(util.BytesPrefix([]byte{pTail}), nil),
		full:  s.db.NewIterator(util.BytesPrefix([]byte{pFull}), nil),
	}
	defer rd.tails.Release()
	defer rd.full.Release()
	var term string
	onChange := func(old *entry, e entry) {
		ed := byNum[e.num]
		if !ed.v.sum.known {
			return // a row of format 2: its sum stays unknown
		}
		if old == nil {
			ed.v.sum.add(term, e)
		} else {
			ed.v.sum.replace(term, *old, e)
		}
		ed.dirty = true
	}
	for _, term = range terms {
		es := byTerm[term]
		if len(held) > 0 {
			es = slices.DeleteFunc(es, func(e entry) bool { return held[e.num] })
			if len(es) == 0 {
				continue
			}
		}
		added, isNew, err := mergeTerm(rd, it, b, term, es, onChange)
		if err != nil {
			return err
		}
		d.postings += int64(added)
		if isNew {
			d.terms++
		}
	}
	if err := rd.tails.Error(); err != nil {
		return err
	}
	if err := rd.full.Error(); err != nil {
		return err
	}
	return it.Error()
}

// blockIters reads blocks by key: iterators over the tails and the
// full blocks.
type blockIters struct{ tails, full iterator.Iterator }

// get returns the value of a full block key (valid until the next get)
// and whether it is there.
func (r blockIters) get(key []byte) ([]byte, bool) {
	if r.full.Seek(key) && bytes.Equal(r.full.Key(), key) {
		return r.full.Value(), true
	}
	return nil, false
}

// tail returns term's tail: its entries, appended to es, and its
// chunks' values by key.
func (r blockIters) tail(es []entry, term string) ([]entry, map[string][]byte, error) {
	tp := termPrefix(pTail, term)
	stored := map[string][]byte{}
	for ok := r.tails.Seek(tp); ok && bytes.HasPrefix(r.tails.Key(), tp); ok = r.tails.Next() {
		k := r.tails.Key()
		if len(k) != len(tp)+4 {
			continue
		}
		stored[string(k)] = bytes.Clone(r.tails.Value())
		var err error
		if es, err = decodeBlock(es, binary.BigEndian.Uint32(k[len(tp):]), r.tails.Value()); err != nil {
			return nil, nil, err
		}
	}
	return es, stored, r.tails.Error()
}

// mergeTerm adds to b the writes that merge es (sorted, distinct) into
// term's blocks: each block an entry falls in (found by a Seek of it,
// an iterator over the index) is read through r, merged with the entries
// that fall in it and, if that changed it, written again. A full block
// is written again in full blocks of at most maxBlock, the last under
// its bound; the tail seals maxBlock entries at a time as full blocks
// and keeps the rest in chunks (putTail). Appending newer versions thus
// rewrites only the tail's open chunk (and writes a sealed chunk, or a
// full block, once as it fills), and ending an old version as well
// rewrites at most the block its entry lies in (nothing if the entry is
// there unchanged). onChange is told each entry added or changed. It
// returns the postings added and whether the term is new.
func mergeTerm(r blockIters, it iterator.Iterator, b *leveldb.Batch, term string, es []entry, onChange func(old *entry, e entry)) (int, bool, error) {
	prefix := termPrefix(pIndex, term)
	isTerm := func() bool {
		k := it.Key()
		return len(k) == len(prefix)+4 && bytes.HasPrefix(k, prefix)
	}
	added, exists := 0, false
	var old []entry
	for len(es) > 0 {
		// The block es[0] falls in: the first full block of bound ≥ its
		// number, else the tail.
		bound := uint32(tailBound)
		if it.Seek(indexKey(term, es[0].num)) && isTerm() {
			bound = binary.BigEndian.Uint32(it.Key()[len(prefix):])
		}
		if bound == tailBound {
			// The rest all fall in the tail.
			var stored map[string][]byte
			var err error
			if old, stored, err = r.tail(old[:0], term); err != nil {
				return 0, false, fmt.Errorf("search store: term %q: %w", term, err)
			}
			exists = exists || len(stored) > 0
			merged, a, changed := mergeEntries(old, es, onChange)
			added += a
			if !changed {
				break
			}
			for len(merged) >= maxBlock {
				ub := merged[maxBlock-1].num
				b.Put(fullKey(term, ub), appendBlock(nil, merged[:maxBlock]))
				b.Put(indexKey(term, ub), nil)
				merged = merged[maxBlock:]
			}
			putTail(b, term, merged, stored)
			break
		}
		key := fullKey(term, bound)
		old = old[:0]
		if v, ok := r.get(key); ok {
			exists = true
			var err error
			if old, err = decodeBlock(old, bound, v); err != nil {
				return 0, false, fmt.Errorf("search store: term %q: %w", term, err)
			}
		}
		n := 1
		for n < len(es) && es[n].num <= bound {
			n++
		}
		merged, a, changed := mergeEntries(old, es[:n], onChange)
		es = es[n:]
		added += a
		if !changed {
			continue
		}
		// Full blocks of maxBlock; the rest is the last full block, under
		// bound.
		for len(merged) > maxBlock {
			ub := merged[maxBlock-1].num
			b.Put(fullKey(term, ub), appendBlock(nil, merged[:maxBlock]))
			b.Put(indexKey(term, ub), nil)
			merged = merged[maxBlock:]
		}
		b.Put(key, appendBlock(nil, merged))
	}
	if !exists {
		exists = it.Seek(prefix) && bytes.HasPrefix(it.Key(), prefix)
		if !exists {
			tp := termPrefix(pTail, term)
			exists = r.tails.Seek(tp) && bytes.HasPrefix(r.tails.Key(), tp)
		}
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
			b.Delete(endKey(v.num))
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
	var es []entry
	for _, p := range []byte{pFull, pTail} {
		it = s.db.NewIterator(util.BytesPrefix([]byte{p}), nil)
		for it.Next() {
			k, v := it.Key(), it.Value()
			var term []byte
			bound := uint32(tailBound)
			ok := false
			if p == pFull {
				term, bound, ok = fullKeyTerm(k)
			} else if term, ok = prefixedTerm(k); ok {
				bound = binary.BigEndian.Uint32(k[len(k)-4:])
			}
			if !ok {
				continue
			}
			var err error
			if es, err = decodeBlock(es[:0], bound, v); err != nil {
				continue
			}
			kept := slices.DeleteFunc(es, func(e entry) bool { return gone[e.num] })
			if len(kept) == blockCount(v) {
				continue
			}
			n += blockCount(v) - len(kept)
			switch {
			case len(kept) > 0:
				b.Put(bytes.Clone(k), appendBlock(nil, kept))
			case p == pFull:
				b.Delete(bytes.Clone(k))
				b.Delete(indexKey(string(term), bound))
			default:
				b.Delete(bytes.Clone(k))
			}
		}
		it.Release()
		if err := it.Error(); err != nil {
			return 0, fmt.Errorf("search store: delete: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.dbWrite(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return 0, fmt.Errorf("search store: delete: %w", err)
	}
	s.gen++
	s.docCache = map[int64]DocStats{}
	return n, s.count()
}
