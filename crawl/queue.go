package crawl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// The queue database holds, in one goleveldb:
//
//	"u/" + url              -> day (8 bytes, big endian) the URL was last
//	                           queued, then its redirect depth (1 byte) when
//	                           it was reached through redirects
//	"p/" + day (8 bytes) + host + 0x00 + seq
//	                        -> url, or 0x01 + depth (1 byte) + url for a
//	                           redirect's target (redirect.go): a pending
//	                           fetch of day, one FIFO per host and day
//	                           (a day's keyspace: newday.go)
//	"d/" + url              -> redirect depth (1 byte, or none for 0): a URL
//	                           never known before that the per-host cap on new
//	                           URLs deferred to a later day (deferred.go)
//	"m/seq"                 -> next sequence number
//	"m/day"                 -> current crawl day
//	"m/newday"              -> day a NewDay is moving to (present only while it runs)
//
// Every key under "u/" is a known URL; it is in today's URL-seen set when its
// value is the current day (or the next, staged by a new day under way), so
// resetting the seen set is one write. Pending entries are deleted only when
// their fetch has finished, so a crash loses nothing: on restart every
// remaining entry of the current day is fetched. Queues written before days
// had keyspaces ("q/" + host + 0x00 + seq) move into the current day's at
// open.
var (
	keySeq    = []byte("m/seq")
	keyDay    = []byte("m/day")
	keyNewDay = []byte("m/newday")
)

const (
	prefixURL      = "u/"
	prefixQueue    = "p/"
	prefixLegacy   = "q/" // queue entries before days had keyspaces
	prefixDeferred = "d/"
	// newDayChunk is how many URLs one NewDay batch queues.
	newDayChunk = 4096
)

// entry is one pending fetch.
type entry struct {
	key   []byte // queue key
	url   string // canonical URL
	epoch uint64 // Crawler.epoch when a host loop took it
	fresh bool   // add made the URL known (it was not before)
	// redirects is how many redirects led to url (0: a link, a seed or a
	// URL queued again at a new day), at most maxRedirectDepth.
	redirects int
	// state is the crawl state read with the entry's batch
	// (hostLoop.prefetch); nil: the fetch reads it.
	state *preState
}

// entryValue is the queue value of url reached through redirects redirects.
func entryValue(url string, redirects int) []byte {
	if redirects <= 0 {
		return []byte(url)
	}
	return append([]byte{redirectMark, byte(min(redirects, maxRedirectDepth))}, url...)
}

// parseEntryValue reverses entryValue. A canonical URL starts with its
// scheme, never with redirectMark.
func parseEntryValue(v []byte) (url string, redirects int) {
	if len(v) >= 2 && v[0] == redirectMark {
		return string(v[2:]), int(v[1])
	}
	return string(v), 0
}

// knownValue is the known-set value of a URL last queued on day, reached
// through redirects redirects.
func knownValue(day int64, redirects int) []byte {
	v := u64(uint64(day))
	if redirects > 0 {
		v = append(v, byte(min(redirects, maxRedirectDepth)))
	}
	return v
}

// parseKnownValue reverses knownValue; ok is false for a malformed value.
func parseKnownValue(v []byte) (day int64, redirects int, ok bool) {
	if len(v) != 8 && len(v) != 9 {
		return 0, 0, false
	}
	if len(v) == 9 {
		redirects = int(v[8])
	}
	return int64(binary.BigEndian.Uint64(v[:8])), redirects, true
}

// redirectMark opens the queue value of a redirect's target.
const redirectMark = 0x01

// queue is the durable per-host FIFO and URL-seen set. Its methods are
// safe for concurrent use.
//
// add runs its seen test under mu and its synced write outside it, so
// concurrent adds share one fsync (goleveldb merges concurrent writes);
// URLs whose write is under way sit in writing, which the seen test also
// consults. A new day is staged a chunk at a time, each built under mu
// and written after it (its URLs meanwhile in staged, which the seen test
// also consults), and switched under days (exclusively) and mu, so the
// switch never overlaps an add's write (newday.go).
type queue struct {
	db *leveldb.DB

	turn sync.Mutex   // one new day at a time (newday.go)
	days sync.RWMutex // add: read; switchDay: write

	// Group commit: adds append their writes to cur and wait for its done;
	// the committer writes each group with one fsync.
	gmu     sync.Mutex
	gcond   *sync.Cond
	cur     *group
	closing bool
	stopped chan struct{}

	mu  sync.Mutex
	seq uint64
	day int64
	// hostNew counts, per host, the URLs never known before that add
	// queued on day hostNewDay (in memory: a restart starts afresh);
	// newCap caps them (<= 0: no cap).
	hostNew    map[string]int
	hostNewDay int64
	newCap     int
	// deferred counts the URLs of each host in the deferred set.
	deferred map[string]int
	// dayNow mirrors day for currentDay, which takes no lock: the node
	// asks it while holding the ring's lock, and newDay holds mu while it
	// asks the ring who owns a URL.
	dayNow  atomic.Int64
	writing map[string]struct{}
	// staged lists the URLs of a new day's chunk staged but not yet
	// written (newday.go, writeStaged): prepare counts them as seen.
	staged map[string]struct{}
	// beforeStagedWrite, when set (by tests, before the queue is used),
	// runs before each staged chunk's write, outside q.mu.
	beforeStagedWrite func()
	// staging is set while a new day is staged; late then lists the URLs
	// add queued and remember made known meanwhile (newday.go).
	staging bool
	late    []stageItem
}

func openQueue(dir string, newCap int) (*queue, error) {
	db, err := leveldb.OpenFile(dir, queueOptions())
	if lerrors.IsCorrupted(err) {
		db, err = leveldb.RecoverFile(dir, queueOptions())
	}
	if err != nil {
		return nil, fmt.Errorf("crawl queue open: %w", err)
	}
	q := &queue{db: db, writing: make(map[string]struct{}), staged: make(map[string]struct{}), newCap: newCap}
	seq, err := q.getUint(keySeq)
	if err != nil {
		db.Close()
		return nil, err
	}
	// Concurrent adds may commit out of order, so m/seq can lag behind a
	// queued key: never reuse a sequence number still in the queue.
	maxSeq, err := q.maxQueuedSeq()
	if err != nil {
		db.Close()
		return nil, err
	}
	seq = max(seq, maxSeq)
	day, err := q.getUint(keyDay)
	if err != nil {
		db.Close()
		return nil, err
	}
	if q.deferred, err = q.countDeferred(); err != nil {
		db.Close()
		return nil, err
	}
	q.seq, q.day = seq, int64(day)
	q.dayNow.Store(q.day)
	if err := q.migrateLegacy(); err != nil {
		db.Close()
		return nil, err
	}
	if err := q.dropBefore(q.day); err != nil {
		db.Close()
		return nil, err
	}
	q.gcond = sync.NewCond(&q.gmu)
	q.stopped = make(chan struct{})
	go q.committer()
	return q, nil
}

// close writes any pending group, stops the committer and closes the
// database.
func (q *queue) close() error {
	q.gmu.Lock()
	q.closing = true
	q.gcond.Signal()
	q.gmu.Unlock()
	<-q.stopped
	return q.db.Close()
}

func (q *queue) getUint(k []byte) (uint64, error) {
	v, err := q.db.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("crawl queue get %s: %w", k, err)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("crawl queue get %s: %d bytes, want 8", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// queueKey is the key of host's entry seq on day.
func queueKey(day int64, host string, seq uint64) []byte {
	k := make([]byte, 0, len(prefixQueue)+8+len(host)+9)
	k = append(k, prefixQueue...)
	k = binary.BigEndian.AppendUint64(k, uint64(day))
	k = append(k, host...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// dayPrefix is the prefix of day's queue entries.
func dayPrefix(day int64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixQueue), uint64(day))
}

// hostPrefix is the prefix of host's queue entries on day.
func hostPrefix(day int64, host string) []byte {
	return append(append(dayPrefix(day), host...), 0)
}

// migrateLegacy moves queue entries written before days had keyspaces
// into the current day's.
func (q *queue) migrateLegacy() error {
	it := q.db.NewIterator(util.BytesPrefix([]byte(prefixLegacy)), nil)
	defer it.Release()
	b := new(leveldb.Batch)
	for it.Next() {
		k := it.Key()[len(prefixLegacy):]
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) != i+9 {
			b.Delete(bytes.Clone(it.Key())) // not an entry
			continue
		}
		b.Put(queueKey(q.day, string(k[:i]), binary.BigEndian.Uint64(k[i+1:])), bytes.Clone(it.Value()))
		b.Delete(bytes.Clone(it.Key()))
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("crawl queue migrate: %w", err)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := q.db.Write(b, &opt.WriteOptions{Sync: true}); err != nil {
		return fmt.Errorf("crawl queue migrate: %w", err)
	}
	return nil
}

// hostOf returns the host[:port] of a canonical URL.
func hostOf(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// currentDay returns the day the seen set belongs to. It takes no lock.
func (q *queue) currentDay() int64 { return q.dayNow.Load() }

// add queues the URLs not seen today, each reached through redirects
// redirects, and returns the new entries, how many of them were never
// known before, and the URLs never known before that it did not queue
// because their host had its newCap of them today (deferred to a later
// day, or dropped past the backlog: deferred.go). The write is synced to
// disk before add returns.
func (q *queue) add(urls []string, redirects int) (added []entry, fresh int, capped []string, err error) {
	q.days.RLock()
	defer q.days.RUnlock()
	if urls = q.unseen(urls); len(urls) == 0 {
		return nil, 0, nil, nil
	}
	kvs, added, fresh, capped, err := q.prepare(urls, redirects)
	if err != nil || len(added) == 0 {
		return nil, 0, capped, err
	}
	err = q.commit(kvs)
	q.mu.Lock()
	for _, e := range added {
		delete(q.writing, e.url)
		if q.staging && err == nil {
			q.late = append(q.late, stageItem{url: e.url, redirects: e.redirects})
		}
	}
	q.mu.Unlock()
	if err != nil {
		return nil, 0, capped, fmt.Errorf("crawl queue add: %w", err)
	}
	return added, fresh, capped, nil
}

// unseen returns the URLs that are not seen today as far as a read
// outside q.mu tells: most links of a page are, and their reads need not
// wait for the lock that adds and a new day's staging take. The caller
// holds q.days, so the day does not change; a URL seen today stays seen
// (its known value only grows, but for unsee, which races with an add in
// any order), so prepare's test under q.mu decides only for the rest. A
// read that fails leaves the URL to prepare, which reports it.
func (q *queue) unseen(urls []string) []string {
	day := q.dayNow.Load()
	out := urls[:0:0]
	for _, u := range urls {
		if v, err := q.db.Get([]byte(prefixURL+u), nil); err == nil {
			if d, _, ok := parseKnownValue(v); ok && d >= day {
				continue
			}
		}
		out = append(out, u)
	}
	return out
}

// maxCapHosts bounds the hosts whose new URLs are counted; past it the
// counts start afresh (a day touching that many hosts is no trap of one).
const maxCapHosts = 1 << 18

// admitNew reports whether host may have one more URL never known before
// today, and counts it. The caller holds q.mu.
func (q *queue) admitNew(host string) bool {
	if q.newCap <= 0 {
		return true
	}
	if q.hostNew == nil || q.hostNewDay != q.day || len(q.hostNew) >= maxCapHosts {
		q.hostNew, q.hostNewDay = make(map[string]int), q.day
	}
	if q.hostNew[host] >= q.newCap {
		return false
	}
	q.hostNew[host]++
	return true
}

// prepare runs the seen test and the per-host cap on new URLs and builds
// add's writes, reserving sequence numbers and marking the URLs as being
// written.
func (q *queue) prepare(urls []string, redirects int) ([][2][]byte, []entry, int, []string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var kvs [][2][]byte
	var added []entry
	var capped []string
	fresh := 0
	for _, u := range urls {
		if _, dup := q.writing[u]; dup {
			continue // in this batch or in a concurrent add's write
		}
		if _, staged := q.staged[u]; staged {
			continue // staged for the new day under way, its write not done
		}
		uk := []byte(prefixURL + u)
		v, err := q.db.Get(uk, nil)
		if err == nil {
			if d, _, ok := parseKnownValue(v); ok && d >= q.day {
				continue // seen today, or staged for the new day under way
			}
		}
		switch {
		case errors.Is(err, leveldb.ErrNotFound):
			if !q.admitNew(hostOf(u)) {
				capped = append(capped, u)
				kv, derr := q.deferLocked(u, redirects)
				if derr != nil {
					for _, e := range added {
						delete(q.writing, e.url)
					}
					return nil, nil, 0, nil, derr
				}
				if kv[0] != nil {
					kvs = append(kvs, kv)
				}
				continue
			}
			fresh++
		case err != nil:
			for _, e := range added {
				delete(q.writing, e.url)
			}
			return nil, nil, 0, nil, fmt.Errorf("crawl queue seen: %w", err)
		}
		k := queueKey(q.day, hostOf(u), q.seq)
		q.seq++
		q.writing[u] = struct{}{}
		kvs = append(kvs, [2][]byte{uk, knownValue(q.day, redirects)}, [2][]byte{k, entryValue(u, redirects)})
		added = append(added, entry{key: k, url: u, fresh: errors.Is(err, leveldb.ErrNotFound), redirects: min(redirects, maxRedirectDepth)})
	}
	kvs = append(kvs, [2][]byte{keySeq, u64(q.seq)})
	return kvs, added, fresh, capped, nil
}

// unsee takes url out of today's URL-seen set (it stays known), so that
// add queues it again. It is not synced: after a crash the URL may count
// as seen for the rest of the day, as it did before unsee.
func (q *queue) unsee(url string) error {
	q.days.RLock()
	defer q.days.RUnlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	uk := []byte(prefixURL + url)
	v, err := q.db.Get(uk, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil // not known
	}
	if err == nil {
		d, redirects, ok := parseKnownValue(v)
		if ok && d != q.day {
			return nil // not seen today
		}
		err = q.db.Put(uk, knownValue(0, redirects), nil) // a day that is never today
	}
	if err != nil {
		return fmt.Errorf("crawl queue unsee: %w", err)
	}
	return nil
}

// maxQueuedSeq returns one more than the highest sequence number in the
// queue, 0 when it is empty.
func (q *queue) maxQueuedSeq() (uint64, error) {
	var m uint64
	for _, p := range []string{prefixQueue, prefixLegacy} {
		it := q.db.NewIterator(util.BytesPrefix([]byte(p)), nil)
		for it.Next() {
			if k := it.Key(); len(k) >= 8 {
				m = max(m, binary.BigEndian.Uint64(k[len(k)-8:])+1)
			}
		}
		it.Release()
		if err := it.Error(); err != nil {
			return 0, fmt.Errorf("crawl queue scan: %w", err)
		}
	}
	return m, nil
}

// next returns up to n pending entries of host on the current day after
// key after (from the start when after is nil).
func (q *queue) next(host string, after []byte, n int) ([]entry, error) {
	p := hostPrefix(q.dayNow.Load(), host)
	r := util.BytesPrefix(p)
	if after != nil {
		r.Start = append(bytes.Clone(after), 0)
	}
	it := q.db.NewIterator(r, nil)
	defer it.Release()
	var out []entry
	for len(out) < n && it.Next() {
		u, redirects := parseEntryValue(it.Value())
		out = append(out, entry{key: bytes.Clone(it.Key()), url: u, redirects: redirects})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("crawl queue next: %w", err)
	}
	return out, nil
}

// done removes a finished entry. It is not synced: after a crash the
// entry may be fetched once more, which a conditional GET makes cheap.
func (q *queue) done(key []byte) error {
	if err := q.db.Delete(key, nil); err != nil {
		return fmt.Errorf("crawl queue done: %w", err)
	}
	return nil
}

// pending returns the hosts with pending entries on the current day and
// the number of entries.
func (q *queue) pending() (map[string]int, int64, error) {
	p := dayPrefix(q.dayNow.Load())
	it := q.db.NewIterator(util.BytesPrefix(p), nil)
	defer it.Release()
	hosts := make(map[string]int)
	var n int64
	for it.Next() {
		k := it.Key()[len(p):]
		if i := bytes.IndexByte(k, 0); i >= 0 {
			hosts[string(k[:i])]++
			n++
		}
	}
	if err := it.Error(); err != nil {
		return nil, 0, fmt.Errorf("crawl queue scan: %w", err)
	}
	return hosts, n, nil
}

// known returns the number of known URLs.
func (q *queue) known() (int64, error) {
	it := q.db.NewIterator(util.BytesPrefix([]byte(prefixURL)), nil)
	defer it.Release()
	var n int64
	for it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("crawl queue scan: %w", err)
	}
	return n, nil
}

// knownURLs calls fn for every known URL, in URL order, from a snapshot.
func (q *queue) knownURLs(fn func(string) error) error {
	snap, err := q.db.GetSnapshot()
	if err != nil {
		return fmt.Errorf("crawl queue snapshot: %w", err)
	}
	defer snap.Release()
	it := snap.NewIterator(util.BytesPrefix([]byte(prefixURL)), nil)
	defer it.Release()
	for it.Next() {
		if err := fn(string(it.Key()[len(prefixURL):])); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("crawl queue scan: %w", err)
	}
	return nil
}

// remember makes the URLs known without queuing them: each absent from the
// known set is recorded as last queued on day 0, so the next newDay queues
// it if this node owns it then. It returns how many became known.
func (q *queue) remember(urls []string) (int, error) {
	q.days.RLock()
	defer q.days.RUnlock()
	b := new(leveldb.Batch)
	zero := u64(0)
	for _, u := range urls {
		uk := []byte(prefixURL + u)
		switch _, err := q.db.Get(uk, nil); {
		case err == nil:
			continue
		case !errors.Is(err, leveldb.ErrNotFound):
			return 0, fmt.Errorf("crawl queue remember: %w", err)
		}
		b.Put(uk, zero)
	}
	if b.Len() == 0 {
		return 0, nil
	}
	if err := q.db.Write(b, nil); err != nil {
		return 0, fmt.Errorf("crawl queue remember: %w", err)
	}
	q.mu.Lock()
	if q.staging {
		// After the write: a day staged from a snapshot taken before it
		// stages these from the late list.
		for _, u := range urls {
			q.late = append(q.late, stageItem{url: u})
		}
	}
	q.mu.Unlock()
	return b.Len(), nil
}
