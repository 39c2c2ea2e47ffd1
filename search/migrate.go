package search

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
)

// migrateBatch is how many first-format rows one migration batch
// converts.
const migrateBatch = 50_000

// migrate converts a store of the first format, a goleveldb row a
// posting (p term 0x00 key from → to, tf, titleTF, docLen, url) and a
// row a document (d key from → to, docLen, url), to the version table
// and blocks. Each synced batch writes some rows in the new form and
// deletes them in the old, so a crash loses nothing and the next open
// goes on. A row that does not decode or Check refuses is dropped (the
// backfill sends its version again). The caller holds no lock: the
// store is not yet shared.
func (s *Store) migrate() error {
	for _, prefix := range []byte{pPosting, pDoc} {
		if err := inSteps("migrate", func() (int, error) { return s.migrateSome(prefix) }); err != nil {
			return err
		}
	}
	return nil
}

// inSteps runs step until it takes nothing; each step moves up to
// migrateBatch rows in one synced batch. An error is wrapped with what.
func inSteps(what string, step func() (int, error)) error {
	for {
		n, err := step()
		if err != nil {
			return fmt.Errorf("search store: %s: %w", what, err)
		}
		if n == 0 {
			return nil
		}
	}
}

// commitStep ends a migration step that took n rows into b through it:
// it releases it and, if n > 0, writes b synced.
func (s *Store) commitStep(it iterator.Iterator, b *leveldb.Batch, n int) (int, error) {
	it.Release()
	if err := it.Error(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	if err := s.dbWrite(b, &opt.WriteOptions{Sync: true}); err != nil {
		return 0, err
	}
	return n, nil
}

// migrateSome converts up to migrateBatch rows of one first-format
// prefix in one synced batch and returns how many it took.
func (s *Store) migrateSome(prefix byte) (int, error) {
	var ps []Posting
	var rows []DocRow
	var b leveldb.Batch
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefix}), nil)
	n := 0
	for n < migrateBatch && it.Next() {
		n++
		k, v := it.Key(), it.Value()
		b.Delete(bytes.Clone(k))
		switch prefix {
		case pPosting:
			if p, err := legacyPosting(k, v); err == nil && p.Check() == nil {
				ps = append(ps, p)
			}
		case pDoc:
			if d, err := legacyDoc(k, v); err == nil && d.URL != "" && len(d.URL) <= maxURLLen && (d.To == Open || d.To >= d.From) {
				rows = append(rows, d)
			}
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.write(&b, ps, rows); err != nil {
		return 0, err
	}
	if err := s.dbWrite(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return 0, err
	}
	return n, nil
}

// legacyPosting decodes a first-format posting row.
func legacyPosting(k, v []byte) (Posting, error) {
	if len(k) < 1+1+id.Size+8 || k[len(k)-1-id.Size-8] != 0 {
		return Posting{}, fmt.Errorf("%w: key of %d bytes", ErrBadPosting, len(k))
	}
	p := Posting{Term: string(k[1 : len(k)-1-id.Size-8])}
	copy(p.Key[:], k[len(k)-id.Size-8:])
	p.From = int64(binary.BigEndian.Uint64(k[len(k)-8:]))
	r := binread.New(v)
	p.To = r.Varint()
	p.TF = r.Uint32()
	p.TitleTF = r.Uint32()
	p.DocLen = r.Uint32()
	if r.Err() != nil {
		return Posting{}, fmt.Errorf("%w: %v", ErrBadPosting, r.Err())
	}
	p.URL = string(r.Rest())
	return p, nil
}

// legacyDoc decodes a first-format document row.
func legacyDoc(k, v []byte) (DocRow, error) {
	if len(k) != 1+id.Size+8 {
		return DocRow{}, fmt.Errorf("%w: doc key of %d bytes", ErrBadPosting, len(k))
	}
	var d DocRow
	copy(d.Key[:], k[1:])
	d.From = int64(binary.BigEndian.Uint64(k[1+id.Size:]))
	r := binread.New(v)
	d.To = r.Varint()
	d.DocLen = r.Uint32()
	if r.Err() != nil {
		return DocRow{}, fmt.Errorf("%w: %v", ErrBadPosting, r.Err())
	}
	d.URL = string(r.Rest())
	return d, nil
}

// migrateBlocks moves the blocks of a store of format 2 or 3 (b term
// 0x00 bound(4), a term's last one under tailBound, of up to maxBlock
// entries) to full blocks and tails: a block of a lower bound becomes
// a full block and its index key, the last one the term's tail (in
// chunks), or a full block if it holds maxBlock entries. Each synced batch moves up to migrateBatch
// blocks and deletes them, so a crash loses nothing and the next open
// goes on. The caller holds no lock: the store is not yet shared.
func (s *Store) migrateBlocks() error {
	return inSteps("migrate blocks", s.migrateSomeBlocks)
}

// migrateSomeBlocks moves up to migrateBatch blocks of format 3 in one
// synced batch and returns how many it took.
func (s *Store) migrateSomeBlocks() (int, error) {
	var b leveldb.Batch
	it := s.db.NewIterator(util.BytesPrefix([]byte{pBlock}), nil)
	n := 0
	for n < migrateBatch && it.Next() {
		n++
		k, v := it.Key(), it.Value()
		b.Delete(bytes.Clone(k))
		if len(k) < 1+1+1+4 || k[len(k)-5] != 0 {
			continue // not a block's key: dropped, as reads skipped it
		}
		term := string(k[1 : len(k)-5])
		bound := binary.BigEndian.Uint32(k[len(k)-4:])
		if bound != tailBound {
			b.Put(fullKey(term, bound), bytes.Clone(v))
			b.Put(indexKey(term, bound), nil)
			continue
		}
		es, err := decodeBlock(nil, bound, v)
		if err != nil {
			b.Put(tailKey(term, tailBound), bytes.Clone(v))
			continue
		}
		for len(es) >= maxBlock {
			ub := es[maxBlock-1].num
			b.Put(fullKey(term, ub), appendBlock(nil, es[:maxBlock]))
			b.Put(indexKey(term, ub), nil)
			es = es[maxBlock:]
		}
		putTail(&b, term, es, nil)
	}
	return s.commitStep(it, &b, n)
}

// migrateVersions moves the identities of a store of format 2 to 4 (v
// key(20) from(8) → num) to format 5's (z ^from(8) key(20) → num), in
// synced batches of up to migrateBatch that each write some and delete
// them, so that a crash loses nothing and the next open goes on. The
// caller holds no lock: the store is not yet shared.
func (s *Store) migrateVersions() error {
	return inSteps("migrate identities", s.migrateSomeVersions)
}

// migrateSomeVersions moves up to migrateBatch identities in one synced
// batch and returns how many it took.
func (s *Store) migrateSomeVersions() (int, error) {
	var b leveldb.Batch
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion4}), nil)
	n := 0
	for n < migrateBatch && it.Next() {
		n++
		k, v := it.Key(), it.Value()
		b.Delete(bytes.Clone(k))
		if len(k) != 1+id.Size+8 {
			continue // not an identity: dropped, as reads skipped it
		}
		var key id.ID
		copy(key[:], k[1:])
		b.Put(identKey(key, int64(binary.BigEndian.Uint64(k[1+id.Size:]))), bytes.Clone(v))
	}
	return s.commitStep(it, &b, n)
}

// migrateTails moves the tails of a store of format 4 (t term 0x00 →
// the whole tail) to chunks (putTail), in synced batches of up to
// migrateBatch tails that each write some and delete them, so that a
// crash loses nothing and the next open goes on. The caller holds no
// lock: the store is not yet shared.
func (s *Store) migrateTails() error {
	return inSteps("migrate tails", s.migrateSomeTails)
}

// migrateSomeTails moves up to migrateBatch whole tails in one synced
// batch and returns how many it took. A chunk's key (t term 0x00
// bound(4)) has a NUL five bytes from its end, a whole tail's (t term
// 0x00) does not: a term holds no NUL.
func (s *Store) migrateSomeTails() (int, error) {
	var b leveldb.Batch
	it := s.db.NewIterator(util.BytesPrefix([]byte{pTail}), nil)
	n := 0
	for n < migrateBatch && it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) >= 7 && k[len(k)-5] == 0 {
			continue // a chunk
		}
		n++
		b.Delete(bytes.Clone(k))
		if len(k) < 3 || k[len(k)-1] != 0 {
			continue // not a tail: dropped, as reads skipped it
		}
		term := string(k[1 : len(k)-1])
		es, err := decodeBlock(nil, tailBound, v)
		if err != nil {
			b.Put(tailKey(term, tailBound), bytes.Clone(v))
			continue
		}
		for len(es) >= maxBlock {
			ub := es[maxBlock-1].num
			b.Put(fullKey(term, ub), appendBlock(nil, es[:maxBlock]))
			b.Put(indexKey(term, ub), nil)
			es = es[maxBlock:]
		}
		putTail(&b, term, es, nil)
	}
	return s.commitStep(it, &b, n)
}
