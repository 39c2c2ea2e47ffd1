package crawl

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// interruptedNewDay returns the day an interrupted newDay was moving to,
// or 0.
func (q *queue) interruptedNewDay() (int64, error) {
	d, err := q.getUint(keyNewDay)
	return int64(d), err
}

// newDay starts day: the seen set is reset, every pending entry dropped,
// and every known URL for which owns returns true (all when owns is nil)
// queued again, in key order. Then, when more is not nil, every URL it
// yields that is not yet known and for which take returns true becomes
// known and is queued too. Last, deferred URLs (deferred.go) are queued
// up to each host's cap of new URLs for day. It returns the queued entries per host, their
// count and how many URLs became known. The target day is recorded first,
// so a crash in the middle is finished by calling newDay again with the
// same day.
func (q *queue) newDay(day int64, owns func(string) bool, more func(yield func(string) error) error, take func(string) bool) (map[string]int, int64, int64, error) {
	q.days.Lock()
	defer q.days.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.db.Put(keyNewDay, u64(uint64(day)), &opt.WriteOptions{Sync: true}); err != nil {
		return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
	}
	// Drop the pending entries of the previous day.
	b := new(leveldb.Batch)
	it := q.db.NewIterator(util.BytesPrefix([]byte(prefixQueue)), nil)
	for it.Next() {
		b.Delete(bytes.Clone(it.Key()))
		if b.Len() >= newDayChunk {
			if err := q.db.Write(b, nil); err != nil {
				it.Release()
				return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
			}
			b.Reset()
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
	}
	// Queue every owned known URL again.
	dayv := u64(uint64(day))
	hosts := make(map[string]int)
	var n int64
	seq := q.seq
	it = q.db.NewIterator(util.BytesPrefix([]byte(prefixURL)), nil)
	defer it.Release()
	for it.Next() {
		u := string(it.Key()[len(prefixURL):])
		if owns != nil && !owns(u) {
			continue
		}
		h := hostOf(u)
		_, redirects, _ := parseKnownValue(it.Value())
		b.Put(bytes.Clone(it.Key()), knownValue(day, redirects))
		b.Put(queueKey(h, seq), entryValue(u, redirects))
		seq++
		hosts[h]++
		n++
		if b.Len() >= newDayChunk {
			b.Put(keySeq, u64(seq))
			if err := q.db.Write(b, nil); err != nil {
				return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
			}
			b.Reset()
		}
	}
	if err := it.Error(); err != nil {
		return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
	}
	var fresh int64
	if more != nil {
		seen := make(map[string]struct{}) // URLs added by this loop, not yet written
		err := more(func(u string) error {
			if _, dup := seen[u]; dup || !take(u) {
				return nil
			}
			uk := []byte(prefixURL + u)
			switch _, err := q.db.Get(uk, nil); {
			case err == nil:
				return nil // known: queued above if owned
			case !errors.Is(err, leveldb.ErrNotFound):
				return err
			}
			seen[u] = struct{}{}
			h := hostOf(u)
			b.Put(uk, dayv)
			b.Put(queueKey(h, seq), []byte(u))
			seq++
			hosts[h]++
			n++
			fresh++
			if b.Len() >= newDayChunk {
				b.Put(keySeq, u64(seq))
				if err := q.db.Write(b, nil); err != nil {
					return err
				}
				b.Reset()
				clear(seen)
			}
			return nil
		})
		if err != nil {
			return nil, 0, 0, fmt.Errorf("crawl queue new day: known urls: %w", err)
		}
	}
	newCounts := make(map[string]int)
	promoted, pn, err := q.promoteDeferred(day, owns, newCounts, &seq, func(k, v, del []byte) error {
		if del != nil {
			b.Delete(del)
		} else {
			b.Put(k, v)
		}
		if b.Len() >= newDayChunk {
			b.Put(keySeq, u64(seq))
			if err := q.db.Write(b, nil); err != nil {
				return fmt.Errorf("crawl queue new day: %w", err)
			}
			b.Reset()
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	for h, c := range promoted {
		hosts[h] += c
	}
	n += pn
	fresh += pn
	b.Put(keySeq, u64(seq))
	b.Put(keyDay, dayv)
	b.Delete(keyNewDay)
	if err := q.db.Write(b, &opt.WriteOptions{Sync: true}); err != nil {
		return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
	}
	q.seq, q.day = seq, day
	q.hostNew, q.hostNewDay = newCounts, day
	q.dayNow.Store(day)
	return hosts, n, fresh, nil
}
