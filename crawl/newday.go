package crawl

import (
	"bytes"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/sortedread"
)

// A new day's queue is a fresh keyspace ("p/" + day, queue.go): it is
// written ahead (stageDay) while the old day's host loops and link intake
// go on, then switched to in one short step (switchDay), and the old
// day's entries are deleted afterwards (dropBefore). Only switchDay holds
// the locks that adds and host loops take, and its work is bounded by the
// links that arrived while the day was staged, not by the URLs known.
//
// The known-set value of a URL staged for day D+1 is D+1 before the day
// changes: add counts a value at or after the current day as seen, so a
// link on day D to a URL already staged is not queued again for day D
// (the old day's entries are dropped at the switch anyway). Links that
// arrive while the day is staged are queued for the old day and listed
// (queue.late); the ones the scans did not stage are staged from that
// list, the last of them in switchDay.

// stageItem is one URL to stage and its redirect depth.
type stageItem struct {
	url       string
	redirects int
}

// stagedDay is a day's queue written ahead of its switch.
type stagedDay struct {
	day       int64
	owns      func(string) bool
	hosts     map[string]int
	n, fresh  int64
	newCounts map[string]int // new URLs per host queued for day (the cap's count)
	// fixup lists URLs staged while an add of the old day was writing
	// their known value: switchDay writes theirs. fixed holds the same
	// URLs, for the late list's check.
	fixup []stageItem
	fixed map[string]struct{}
}

// lateDrainMin is the late list's length below which stageDay leaves it
// to switchDay.
const lateDrainMin = 1024

// interruptedNewDay returns the day an interrupted newDay was moving to,
// or 0.
func (q *queue) interruptedNewDay() (int64, error) {
	d, err := q.getUint(keyNewDay)
	return int64(d), err
}

// newDay starts day in one call: stageDay, switchDay, dropBefore. It
// returns the queued entries per host, their count and how many URLs
// became known. The crawler runs the three steps itself, switching under
// its own day lock.
func (q *queue) newDay(day int64, owns func(string) bool, more func(yield func(string) error) error, take func(string) bool) (map[string]int, int64, int64, error) {
	q.turn.Lock()
	defer q.turn.Unlock()
	st, err := q.stageDay(day, owns, more, take)
	if err != nil {
		return nil, 0, 0, err
	}
	hosts, n, fresh, err := q.switchDay(st)
	if err != nil {
		return nil, 0, 0, err
	}
	return hosts, n, fresh, q.dropBefore(day)
}

// stageDay writes day's queue ahead of its switch: every known URL for
// which owns returns true (all when owns is nil), in key order; then,
// when more is not nil, every URL it yields that is not yet known and for
// which take returns true, made known; then deferred URLs (deferred.go) up
// to each host's cap of new URLs for day; then the links that arrived
// meanwhile. The target day is recorded first, so a crash in the middle
// is finished by staging the same day again (which clears what the first
// try staged). The caller holds q.turn and calls switchDay next.
func (q *queue) stageDay(day int64, owns func(string) bool, more func(yield func(string) error) error, take func(string) bool) (*stagedDay, error) {
	st := &stagedDay{day: day, owns: owns, hosts: make(map[string]int), newCounts: make(map[string]int), fixed: make(map[string]struct{})}
	if err := q.db.Put(keyNewDay, u64(uint64(day)), &opt.WriteOptions{Sync: true}); err != nil {
		return nil, fmt.Errorf("crawl queue new day: %w", err)
	}
	if err := q.deleteRange(util.BytesPrefix(dayPrefix(day))); err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.staging, q.late = true, nil
	q.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			q.mu.Lock()
			q.staging, q.late = false, nil
			q.mu.Unlock()
		}
	}()
	if err := q.stageOwnedKnown(st, owns); err != nil {
		return nil, err
	}
	if more != nil {
		if err := q.stageMore(st, more, take); err != nil {
			return nil, err
		}
	}
	if err := q.stageDeferred(st); err != nil {
		return nil, err
	}
	if err := q.drainLate(st); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

// stageOwnedKnown stages every known URL for which owns returns true (all
// when owns is nil), from a snapshot, a chunk at a time.
func (q *queue) stageOwnedKnown(st *stagedDay, owns func(string) bool) error {
	snap, err := q.db.GetSnapshot()
	if err != nil {
		return fmt.Errorf("crawl queue new day: %w", err)
	}
	defer snap.Release()
	it := snap.NewIterator(util.BytesPrefix([]byte(prefixURL)), nil)
	defer it.Release()
	var chunk []stageItem
	for it.Next() {
		u := string(it.Key()[len(prefixURL):])
		if owns != nil && !owns(u) {
			continue
		}
		_, redirects, _ := parseKnownValue(it.Value())
		chunk = append(chunk, stageItem{url: u, redirects: redirects})
		if len(chunk) >= newDayChunk {
			if err := q.stageKnown(st, chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("crawl queue new day: %w", err)
	}
	return q.stageKnown(st, chunk)
}

// stageMore stages the URLs more yields (the archive's) that are not
// known yet and for which take returns true.
func (q *queue) stageMore(st *stagedDay, more func(yield func(string) error) error, take func(string) bool) error {
	var chunk []stageItem
	err := more(func(u string) error {
		if !take(u) {
			return nil
		}
		chunk = append(chunk, stageItem{url: u})
		if len(chunk) >= newDayChunk {
			err := q.stageUnknown(st, chunk)
			chunk = chunk[:0]
			return err
		}
		return nil
	})
	if err == nil {
		err = q.stageUnknown(st, chunk)
	}
	if err != nil {
		return fmt.Errorf("crawl queue new day: known urls: %w", err)
	}
	return nil
}

// drainLate stages the links that arrived while the day was staged, while
// there are many.
func (q *queue) drainLate(st *stagedDay) error {
	for {
		q.mu.Lock()
		late := q.late
		if len(late) < lateDrainMin {
			q.mu.Unlock()
			return nil
		}
		q.late = nil
		q.mu.Unlock()
		if err := q.stageLate(st, late, false); err != nil {
			return err
		}
	}
}

// writeStaged writes a chunk staged under q.mu (b, and the URLs whose
// known value it sets, listed in q.staged) after the caller released it,
// so that adds do not wait for a write that goleveldb may hold up while it
// compacts; then it takes the URLs out of q.staged. Until then prepare
// counts them as seen, as it does once the write is done. Only the
// staging goroutine (q.turn) writes staged chunks, one at a time.
func (q *queue) writeStaged(b *leveldb.Batch, urls []string) error {
	if q.beforeStagedWrite != nil {
		q.beforeStagedWrite()
	}
	err := q.db.Write(b, nil)
	q.mu.Lock()
	for _, u := range urls {
		delete(q.staged, u)
	}
	q.mu.Unlock()
	if err != nil {
		return fmt.Errorf("crawl queue new day: %w", err)
	}
	return nil
}

// writeChunk writes b with the next sequence number; the caller holds q.mu.
func (q *queue) writeChunk(b *leveldb.Batch) error {
	b.Put(keySeq, u64(q.seq))
	if err := q.db.Write(b, nil); err != nil {
		return fmt.Errorf("crawl queue new day: %w", err)
	}
	return nil
}

// stageOneLocked stages u for st's day in b and, when staged is not nil,
// lists u in it and q.staged when b sets its known value (for
// writeStaged); the caller holds q.mu.
func (q *queue) stageOneLocked(st *stagedDay, b *leveldb.Batch, it stageItem, staged *[]string) {
	h := hostOf(it.url)
	b.Put(queueKey(st.day, h, q.seq), entryValue(it.url, it.redirects))
	q.seq++
	if _, writing := q.writing[it.url]; writing {
		// An add of the old day is writing its known value: ours after it.
		st.fixup = append(st.fixup, it)
		st.fixed[it.url] = struct{}{}
	} else {
		b.Put([]byte(prefixURL+it.url), knownValue(st.day, it.redirects))
		if staged != nil {
			q.staged[it.url] = struct{}{}
			*staged = append(*staged, it.url)
		}
	}
	st.hosts[h]++
	st.n++
}

// stageKnown stages a chunk of known URLs.
func (q *queue) stageKnown(st *stagedDay, items []stageItem) error {
	if len(items) == 0 {
		return nil
	}
	q.mu.Lock()
	b := new(leveldb.Batch)
	staged := make([]string, 0, len(items))
	for _, it := range items {
		q.stageOneLocked(st, b, it, &staged)
	}
	b.Put(keySeq, u64(q.seq))
	q.mu.Unlock()
	return q.writeStaged(b, staged)
}

// stageUnknown stages the URLs of a chunk that are not known, making them
// known. The known test runs outside q.mu: a URL an add of the old day
// makes known meanwhile is staged here or from the late list, not twice
// (stageLate skips a URL whose known value is the staged day).
func (q *queue) stageUnknown(st *stagedDay, items []stageItem) error {
	items, err := q.unknown(items, func(stageItem, []byte) bool { return false })
	if err != nil || len(items) == 0 {
		return err
	}
	q.mu.Lock()
	b := new(leveldb.Batch)
	staged := make([]string, 0, len(items))
	for _, it := range items {
		if _, writing := q.writing[it.url]; writing {
			continue // an add of the old day makes it known: the late list stages it
		}
		q.stageOneLocked(st, b, it, &staged)
		st.fresh++
	}
	b.Put(keySeq, u64(q.seq))
	q.mu.Unlock()
	return q.writeStaged(b, staged)
}

// unknown returns the items, once each, that are not known or whose known
// value keep accepts. Their known values are read in key order through
// one iterator (sortedread): a chunk of the archive's URLs is a few
// hosts' URLs, neighbours in the queue database, where a Get each, at a
// million URLs, searched the tables one by one.
func (q *queue) unknown(items []stageItem, keep func(stageItem, []byte) bool) ([]stageItem, error) {
	seen := make(map[string]struct{}, len(items))
	once := items[:0:0]
	keys := make([][]byte, 0, len(items))
	for _, it := range items {
		if _, dup := seen[it.url]; dup {
			continue
		}
		seen[it.url] = struct{}{}
		once = append(once, it)
		keys = append(keys, []byte(prefixURL+it.url))
	}
	take := make([]bool, len(once))
	for i := range take {
		take[i] = true // not known
	}
	iter := q.db.NewIterator(util.BytesPrefix([]byte(prefixURL)), nil)
	err := sortedread.Read(iter, keys, func(i int, v []byte) error {
		take[i] = keep(once[i], v)
		return nil
	})
	iter.Release()
	if err != nil {
		return nil, fmt.Errorf("crawl queue new day: %w", err)
	}
	out := once[:0]
	for i, it := range once {
		if take[i] {
			out = append(out, it)
		}
	}
	return out, nil
}

// stageLate stages the URLs of the late list (links added, or URLs
// remembered, while the day was staged) that no scan staged, a chunk at a
// time. locked means the caller holds q.mu (the switch).
func (q *queue) stageLate(st *stagedDay, late []stageItem, locked bool) error {
	for len(late) > 0 {
		n := min(len(late), newDayChunk)
		if err := q.stageLateChunk(st, late[:n], locked); err != nil {
			return err
		}
		late = late[n:]
	}
	return nil
}

func (q *queue) stageLateChunk(st *stagedDay, late []stageItem, locked bool) error {
	owned := late[:0:0]
	for _, it := range late {
		if st.owns == nil || st.owns(it.url) {
			owned = append(owned, it)
		}
	}
	notStaged := func(it stageItem, v []byte) bool {
		d, _, ok := parseKnownValue(v)
		return !ok || d != st.day
	}
	if !locked {
		// A first pass outside the lock, then again under it: a scan may
		// stage a URL in between.
		var err error
		if owned, err = q.unknown(owned, notStaged); err != nil {
			return err
		}
		q.mu.Lock()
	}
	owned, err := q.unknown(owned, notStaged)
	if err != nil {
		if !locked {
			q.mu.Unlock()
		}
		return err
	}
	b := new(leveldb.Batch)
	var staged *[]string
	if !locked {
		staged = new([]string)
	}
	for _, it := range owned {
		if _, fixed := st.fixed[it.url]; fixed {
			continue
		}
		q.stageOneLocked(st, b, it, staged)
	}
	if locked {
		return q.writeChunk(b)
	}
	b.Put(keySeq, u64(q.seq))
	q.mu.Unlock()
	return q.writeStaged(b, *staged)
}

// stageDeferred promotes deferred URLs into the staged day
// (promoteDeferred).
func (q *queue) stageDeferred(st *stagedDay) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := new(leveldb.Batch)
	promoted, pn, err := q.promoteDeferred(st.day, st.owns, st.newCounts, &q.seq, func(k, v, del []byte) error {
		if del != nil {
			b.Delete(del)
		} else {
			b.Put(k, v)
		}
		if b.Len() >= newDayChunk {
			if err := q.writeChunk(b); err != nil {
				return err
			}
			b.Reset()
		}
		return nil
	})
	if err != nil {
		return err
	}
	for h, c := range promoted {
		st.hosts[h] += c
	}
	st.n += pn
	st.fresh += pn
	return q.writeChunk(b)
}

// switchDay makes st's day the current one: it stages the last links that
// arrived, records the day and resets the day's counts. The caller holds
// q.turn and keeps host loops and adds out (Crawler.dayMu); switchDay
// takes q.days and q.mu for the switch only. It returns the staged
// entries per host, their count and how many URLs became known.
func (q *queue) switchDay(st *stagedDay) (map[string]int, int64, int64, error) {
	q.days.Lock()
	defer q.days.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	late := q.late
	q.staging, q.late = false, nil
	if err := q.stageLate(st, late, true); err != nil {
		return nil, 0, 0, err
	}
	b := new(leveldb.Batch)
	for _, it := range st.fixup {
		b.Put([]byte(prefixURL+it.url), knownValue(st.day, it.redirects))
	}
	b.Put(keySeq, u64(q.seq))
	b.Put(keyDay, u64(uint64(st.day)))
	b.Delete(keyNewDay)
	if err := q.db.Write(b, &opt.WriteOptions{Sync: true}); err != nil {
		return nil, 0, 0, fmt.Errorf("crawl queue new day: %w", err)
	}
	q.day = st.day
	q.hostNew, q.hostNewDay = st.newCounts, st.day
	q.dayNow.Store(st.day)
	return st.hosts, st.n, st.fresh, nil
}

// dropBefore deletes the queue entries of the days before day (left
// unfetched when it began), without holding a lock: no one reads them.
func (q *queue) dropBefore(day int64) error {
	return q.deleteRange(&util.Range{Start: []byte(prefixQueue), Limit: dayPrefix(day)})
}

// deleteRange deletes every key in r, a chunk at a time.
func (q *queue) deleteRange(r *util.Range) error {
	it := q.db.NewIterator(r, nil)
	defer it.Release()
	b := new(leveldb.Batch)
	for it.Next() {
		b.Delete(bytes.Clone(it.Key()))
		if b.Len() >= newDayChunk {
			if err := q.db.Write(b, nil); err != nil {
				return fmt.Errorf("crawl queue drop: %w", err)
			}
			b.Reset()
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("crawl queue drop: %w", err)
	}
	if err := q.db.Write(b, nil); err != nil {
		return fmt.Errorf("crawl queue drop: %w", err)
	}
	return nil
}
