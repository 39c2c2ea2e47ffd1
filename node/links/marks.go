package links

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Read marks: beside each source's state (pState, keyed by URL, its
// open links in JSON), the Indexer keeps the capture time of the last
// version it read and delivered, keyed by the source's archive key
// (id.OfString of the URL), 8 bytes. A sweep of every source walks
// them in key order beside the archive's newest versions
// (archive.Store.Heads) and reads only the sources whose newest version
// is after their mark: one sequential scan of each instead of a state
// decoded and a version list read per source.

func readKey(k id.ID) []byte { return append([]byte{pRead}, k[:]...) }

func encRead(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())^(1<<63))
}

func decRead(b []byte) (time.Time, bool) {
	if len(b) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)^(1<<63))).UTC(), true
}

// Marks is a cursor over the read marks in key order, for one walk.
// Its Read calls must ask for keys in increasing order. A Marks is not
// safe for concurrent use; Release it after the walk.
type Marks struct {
	it  iterator.Iterator
	ok  bool  // it is on a mark
	key id.ID // the mark's key, when ok
}

// Marks returns a cursor over the read marks of the keys after after
// (nil: all).
func (ix *Indexer) Marks(after *id.ID) *Marks {
	r := util.BytesPrefix([]byte{pRead})
	if after != nil {
		r.Start = append(readKey(*after), 0)
	}
	m := &Marks{it: ix.Index.db.NewIterator(r, &opt.ReadOptions{DontFillCache: true})} // a bulk scan
	m.next()
	return m
}

func (m *Marks) next() {
	for m.ok = m.it.Next(); m.ok; m.ok = m.it.Next() {
		if k := m.it.Key(); len(k) == 1+id.Size {
			copy(m.key[:], k[1:])
			return
		}
	}
}

// Read returns the capture time of the last version of the source of
// key k the Indexer read and delivered, if it holds one. Keys must come
// in increasing order.
func (m *Marks) Read(k id.ID) (time.Time, bool) {
	for m.ok && m.key.Less(k) {
		m.next()
	}
	if !m.ok || m.key != k {
		return time.Time{}, false
	}
	return decRead(m.it.Value())
}

// Release releases the cursor and returns the error its walk met, if
// any (a mark it could not read counts as absent: its source is read).
func (m *Marks) Release() error {
	err := m.it.Error()
	m.it.Release()
	if err != nil {
		return fmt.Errorf("links marks: %w", err)
	}
	return nil
}

// putRead adds the read mark of source to b.
func putRead(b *leveldb.Batch, source string, last time.Time) {
	b.Put(readKey(id.OfString(source)), encRead(last))
}

// DropReadMarks deletes every read mark, as in an index written before
// them: the next sweep of every source reads each one once (and finds
// nothing newer to send) and marks it again.
func (x *Index) DropReadMarks() error {
	it := x.db.NewIterator(util.BytesPrefix([]byte{pRead}), nil)
	defer it.Release()
	b := new(leveldb.Batch)
	for it.Next() {
		b.Delete(slices.Clone(it.Key()))
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("links drop marks: %w", err)
	}
	if err := x.db.Write(b, nil); err != nil {
		return fmt.Errorf("links drop marks: %w", err)
	}
	return nil
}
