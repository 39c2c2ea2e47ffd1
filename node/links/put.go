package links

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/archive"
)

// A Put reads what the index holds of its batch in key order. A target
// that its batch cannot take past the cap (the bound of heldbound.go)
// has each of its records read by key: the bloom filters answer for a
// new record without reading a block. Any other target is walked
// through one iterator: one seek to the target's records and a walk
// over them (at most PerTarget), which finds the copies held of the
// batch's records and counts the target's records, so the count needs
// no key of its own and no read-modify-write; only a target over its
// cap reads and writes its refused count. A point read per record and
// a count key per target (before the walks) made the reads most of a
// sweep's cost at a million URLs, and so did a seek per target once
// the index outgrew the block cache (docs/links.md, "Cost of a sweep").

// putRec is one record of a Put's batch with its key; first is the
// position of its first copy in the batch, which decides which of a
// full target's new records are kept.
type putRec struct {
	key   []byte
	r     Record
	first int
}

// Put stores recs, each checked (Record.Check, and Seen not after the
// index's clock by more than archive.MaxClockSkew, so that no copy can
// outrank every later one): a record already held is replaced by a copy
// with a later or equal Seen (of two copies in one batch, the later Seen
// counts, then the later in the batch); a new record is kept while its
// target has fewer than PerTarget, in the batch's order, and counted
// otherwise. It returns how many records it took (stored or counted); a
// bad record is an error and stores nothing of the batch.
func (x *Index) Put(ctx context.Context, recs []Record) (int, error) {
	now := time.Now
	if x.cfg.Now != nil {
		now = x.cfg.Now
	}
	latest := now().Add(archive.MaxClockSkew)
	for _, r := range recs {
		if err := r.Check(); err != nil {
			return 0, err
		}
		if r.Seen.After(latest) {
			return 0, fmt.Errorf("%w: seen %s is in the future", errRecord, r.Seen.UTC().Format(time.RFC3339))
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("links put: %w", err)
	}
	ps := sortedPuts(recs)
	x.mu.Lock()
	defer x.mu.Unlock()
	counts := x.held
	if counts == nil {
		counts = x.pending
	}
	b := new(leveldb.Batch)
	var it iterator.Iterator // made for the first target walked
	defer func() {
		if it != nil {
			it.Release()
		}
	}()
	for len(ps) > 0 {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("links put: %w", err)
		}
		target := ps[0].r.Target
		n := 1
		for n < len(ps) && ps[n].r.Target == target {
			n++
		}
		var added int
		var err error
		if x.held != nil && x.held.bound(target)+n <= x.cfg.PerTarget {
			added, err = x.putByKey(b, ps[:n])
			x.byKey++
		} else {
			x.walked++
			prefix := linkPrefix(target)
			// The iterator stands on the first key after the last
			// target walked: when that is not before this target's,
			// it is the first of them (or of a later target).
			if it == nil {
				it = x.db.NewIterator(&util.Range{Start: []byte{pLink}, Limit: []byte{pLink + 1}}, nil)
			}
			if !it.Valid() || bytes.Compare(it.Key(), prefix) < 0 {
				it.Seek(prefix)
			}
			added, err = x.putTarget(b, it, prefix, ps[:n])
		}
		if err != nil {
			return 0, err
		}
		if counts != nil {
			counts.add(target, added)
		}
		ps = ps[n:]
	}
	if it != nil {
		if err := it.Error(); err != nil {
			return 0, fmt.Errorf("links put: %w", err)
		}
	}
	if b.Len() > 0 {
		if err := x.db.Write(b, nil); err != nil {
			return 0, fmt.Errorf("links put: %w", err)
		}
	}
	return len(recs), nil
}

// sortedPuts returns recs keyed and sorted by key, one a key: of copies
// of one record, the one with the latest Seen (the later in the batch of
// equals), at the position of the first copy.
func sortedPuts(recs []Record) []putRec {
	ps := make([]putRec, len(recs))
	for i, r := range recs {
		ps[i] = putRec{key: linkKey(r), r: r, first: i}
	}
	slices.SortStableFunc(ps, func(a, b putRec) int { return bytes.Compare(a.key, b.key) })
	out := ps[:0]
	for _, p := range ps {
		if len(out) > 0 && bytes.Equal(out[len(out)-1].key, p.key) {
			last := &out[len(out)-1]
			if !p.r.Seen.Before(last.r.Seen) {
				last.r = p.r
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// putByKey adds to b the records ps of one target, each read by its key:
// a held record is replaced unless its copy is newer, a new one kept.
// The caller has made sure that the target stays within its cap
// (heldBound). It returns how many records were new.
func (x *Index) putByKey(b *leveldb.Batch, ps []putRec) (int, error) {
	added := 0
	for _, p := range ps {
		v, err := x.db.Get(p.key, nil)
		switch {
		case errors.Is(err, leveldb.ErrNotFound):
			putStored(b, p)
			added++
		case err != nil:
			return 0, fmt.Errorf("links put: %w", err)
		default:
			if s, err := decodeStored(v); err != nil || !p.r.Seen.Before(s.Seen) {
				putStored(b, p)
			}
		}
	}
	return added, nil
}

// putTarget adds to b the records ps of one target (sorted by key), it
// standing on the first key at or after prefix: a held record is
// replaced unless its copy is newer, a new one kept while the target has
// fewer than PerTarget. It leaves it on the first key after the
// target's records, and returns how many new records it kept.
func (x *Index) putTarget(b *leveldb.Batch, it iterator.Iterator, prefix []byte, ps []putRec) (int, error) {
	held := 0
	var fresh []putRec
	j := 0
	for ok := it.Valid(); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		held++
		k := it.Key()
		for ; j < len(ps) && bytes.Compare(ps[j].key, k) < 0; j++ {
			fresh = append(fresh, ps[j])
		}
		if j < len(ps) && bytes.Equal(ps[j].key, k) {
			if s, err := decodeStored(it.Value()); err != nil || !ps[j].r.Seen.Before(s.Seen) {
				putStored(b, ps[j])
			}
			j++
		}
	}
	fresh = append(fresh, ps[j:]...)
	if len(fresh) == 0 {
		return 0, nil
	}
	slices.SortFunc(fresh, func(a, b putRec) int { return a.first - b.first })
	keep := min(len(fresh), max(0, x.cfg.PerTarget-held))
	for _, p := range fresh[:keep] {
		putStored(b, p)
	}
	if over := len(fresh) - keep; over > 0 {
		k := countKey(pMore, ps[0].r.Target)
		m, err := x.getCount(k)
		if err != nil {
			return 0, err
		}
		b.Put(k, binary.BigEndian.AppendUint32(nil, m+uint32(over)))
	}
	return keep, nil
}

func putStored(b *leveldb.Batch, p putRec) {
	b.Put(p.key, stored{Anchor: p.r.Anchor, Until: p.r.Until, Seen: p.r.Seen}.encode())
}
