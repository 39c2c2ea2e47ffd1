package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/binread"
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

// PutDocs records indexed versions in the document table (the version
// table's rows, marked), merged as postings are (an end, once known,
// stays). It returns once they are durable.
func (s *Store) PutDocs(ctx context.Context, rows []DocRow) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.URL == "" || len(r.URL) > maxURLLen || (r.To != Open && r.To < r.From) {
			return fmt.Errorf("%w: document row of %q from %d to %d", ErrBadPosting, r.URL, r.From, r.To)
		}
	}
	return s.commit(nil, rows, "docs")
}

// docStatsGrain is the time grain (Unix ms) of the statistics cache: a
// query's statistics are those of the end of its hour.
const docStatsGrain = 3600 * 1000

// DocStats returns the statistics of the versions in the document table
// live at the end of the hour of Unix ms at: BM25's statistics need not
// be exact to the millisecond. An hour's are counted once, then kept
// (for up to 1,024 hours) and updated by each write of the table.
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
	snap, err := s.db.GetSnapshot()
	if err != nil {
		return DocStats{}, fmt.Errorf("search store: doc stats: %w", err)
	}
	defer snap.Release()
	it := snap.NewIterator(util.BytesPrefix([]byte{pDocs}), nil)
	defer it.Release()
	ends := newEndCursor(snap)
	defer ends.release()
	for it.Next() {
		r := binread.New(it.Value())
		v := version{from: r.Varint(), to: r.Varint(), docLen: r.Uint32()}
		if len(it.Key()) == 5 {
			v.num = binary.BigEndian.Uint32(it.Key()[1:])
			v = ends.withEnd(v)
		}
		if r.Err() == nil && v.liveAt(at) {
			st.N++
			st.SumLen += int64(v.docLen)
		}
	}
	if err := errors.Join(it.Error(), ends.err()); err != nil {
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
