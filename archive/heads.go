package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Head is what Heads says of one URL of the store: its key, the URL and
// the capture time of its newest version.
type Head struct {
	Key    id.ID
	URL    []byte // valid only during the call of Heads' fn
	Newest time.Time
}

// Heads calls fn for every URL of the store in key order (the order of
// id.OfString of the URLs), once each, with the time of its newest
// version; after non-nil starts the walk past that key (which need not
// be in the store), so that a walk can be cut into pieces. It reads the
// version index in order, decoding only keys and the newest version's
// URL: a walk of the whole store costs one sequential scan, where a
// Versions per URL costs a seek into every level. The blocks it reads
// do not enter the block cache. fn's error stops the
// walk and is returned. An entry it cannot decode is skipped and
// counted (Stats.Corrupt).
func (s *Store) Heads(ctx context.Context, after *id.ID, fn func(Head) error) error {
	r := util.BytesPrefix([]byte{pVersion})
	if after != nil {
		// Past every version key of after: a time and a digest of 0xff
		// bytes sort after all of them.
		r.Start = append(versionPrefix(*after), bytes.Repeat([]byte{0xff}, 8+id.Size+1)...)
	}
	// A bulk scan: its blocks are read once, and would push the crawl's
	// hot blocks (states, newest versions) out of the block cache.
	it := s.db.NewIterator(r, &opt.ReadOptions{DontFillCache: true})
	defer it.Release()
	var h Head
	var url []byte // the URL of h's newest version so far
	have := false
	bad := 0 // entries skipped
	emit := func() error {
		h.URL = url
		return fn(h)
	}
	for n, ok := 0, it.Next(); ok; n, ok = n+1, it.Next() {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("archive heads: %w", err)
			}
		}
		k, v := it.Key(), it.Value()
		u, err := valueURL(k, v)
		if err != nil {
			// One bad entry does not stop every walk (a link sweep's):
			// it is counted, logged once a walk, and skipped.
			s.corrupt.Add(1)
			if bad++; bad == 1 {
				s.log.Error("corrupt index entry", "key", fmt.Sprintf("%x", k), "err", err)
			}
			continue
		}
		var key id.ID
		copy(key[:], k[1:1+id.Size])
		if have && key != h.Key {
			if err := emit(); err != nil {
				return err
			}
		}
		// Versions of a key are in time order: the last one read is
		// the newest.
		h.Key, h.Newest, have = key, decTime(k[1+id.Size:]), true
		url = append(url[:0], u...)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("archive heads: %w", err)
	}
	if have {
		return emit()
	}
	return nil
}

// valueURL returns the URL of a version entry's value of either format
// without decoding the rest.
func valueURL(k, v []byte) ([]byte, error) {
	if len(k) != versionKeyLen || len(v) == 0 || (v[0] != formatFile && v[0] != formatSegment) {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || n > uint64(len(v)-1-w) {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	return v[1+w : 1+w+int(n)], nil
}
