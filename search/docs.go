package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// DocRow is one indexed version in the document table: the node that
// indexed a URL's versions (its holder) keeps their ranges and lengths,
// from which the collection statistics as of any time are counted.
type DocRow struct {
	Key    id.ID
	URL    string
	From   int64
	To     int64
	DocLen uint32
}

func docKey(k id.ID, from int64) []byte {
	b := make([]byte, 0, 1+id.Size+8)
	b = append(b, pDoc)
	b = append(b, k[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(from))
}

func decodeDoc(k, v []byte) (DocRow, error) {
	if len(k) != 1+id.Size+8 {
		return DocRow{}, fmt.Errorf("%w: doc key of %d bytes", ErrBadPosting, len(k))
	}
	var d DocRow
	copy(d.Key[:], k[1:])
	d.From = int64(binary.BigEndian.Uint64(k[1+id.Size:]))
	r := reader{b: v}
	d.To = r.varint()
	d.DocLen = r.u32()
	if r.err != nil {
		return DocRow{}, fmt.Errorf("%w: %v", ErrBadPosting, r.err)
	}
	d.URL = string(r.b)
	return d, nil
}

// PutDocs records indexed versions in the document table, merged as
// postings are (an end, once known, stays).
func (s *Store) PutDocs(ctx context.Context, rows []DocRow) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var b leveldb.Batch
	added := int64(0)
	for _, d := range rows {
		k := docKey(d.Key, d.From)
		old, err := s.db.Get(k, nil)
		switch {
		case err == nil:
			if od, derr := decodeDoc(k, old); derr == nil && od.To != Open && (d.To == Open || od.To < d.To) {
				d.To = od.To
			}
		case errors.Is(err, leveldb.ErrNotFound):
			added++
		default:
			return fmt.Errorf("search store: %w", err)
		}
		v := binary.AppendVarint(nil, d.To)
		v = binary.AppendUvarint(v, uint64(d.DocLen))
		b.Put(k, append(v, d.URL...))
	}
	if err := s.db.Write(&b, &opt.WriteOptions{Sync: true}); err != nil {
		return fmt.Errorf("search store: docs: %w", err)
	}
	s.docs += added
	s.gen++
	s.docCache = map[int64]DocStats{}
	return nil
}

// docStatsGrain is the time grain (Unix ms) of the statistics cache: a
// query's statistics are those of the end of its hour.
const docStatsGrain = 3600 * 1000

// DocStats returns the statistics of the versions in the document table
// live at the end of the hour of Unix ms at (cached until the table
// changes): BM25's statistics need not be exact to the millisecond.
func (s *Store) DocStats(ctx context.Context, at int64) (DocStats, error) {
	g := at - at%docStatsGrain
	at = g + docStatsGrain - 1
	s.mu.Lock()
	if st, ok := s.docCache[g]; ok {
		s.mu.Unlock()
		return st, nil
	}
	gen := s.gen
	s.mu.Unlock()
	var st DocStats
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDoc}), nil)
	defer it.Release()
	for it.Next() {
		d, err := decodeDoc(it.Key(), it.Value())
		if err != nil {
			continue
		}
		if d.From <= at && (d.To == Open || at < d.To) {
			st.N++
			st.SumLen += int64(d.DocLen)
		}
	}
	if err := it.Error(); err != nil {
		return DocStats{}, fmt.Errorf("search store: doc stats: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return DocStats{}, err
	}
	s.mu.Lock()
	if s.gen == gen && len(s.docCache) < 1024 {
		s.docCache[g] = st
	}
	s.mu.Unlock()
	return st, nil
}
