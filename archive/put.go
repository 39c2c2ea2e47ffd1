package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/url"
	"strings"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
)

// Capture times must fit the index's nanosecond encoding (years 1678-2262).
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// checkCapture validates what Put cannot store faithfully.
func checkCapture(c *Capture) error {
	if c.URL == "" || len(c.URL) > canon.MaxLen {
		return fmt.Errorf("bad url length %d", len(c.URL))
	}
	if strings.ContainsAny(c.URL, " \t\r\n\x00") {
		return fmt.Errorf("url %q contains whitespace or control characters", c.URL)
	}
	if c.Time.IsZero() || c.Time.Before(minTime) || !c.Time.Before(maxTime) {
		return fmt.Errorf("capture time %v out of range", c.Time)
	}
	if int64(len(c.Body)) > maxBlock-64<<10 {
		return fmt.Errorf("payload of %d bytes is too large", len(c.Body))
	}
	if c.Resource {
		return checkResource(c)
	}
	if _, ok := ScreenshotPage(c.URL); ok {
		return fmt.Errorf("%s is a screenshot's URL: a resource record", c.URL)
	}
	return nil
}

// hostOf returns the host (with any port) of a canonical URL, "" if none.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// MediaType returns the media type of a Content-Type value, without
// parameters, or the value itself if it does not parse: what
// Version.ContentType holds.
func MediaType(v string) string {
	if v == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return strings.TrimSpace(v)
	}
	return mt
}

// Put stores c as a new version unless its payload SHA-1 and HTTP status
// equal those of the newest stored version of c.URL (a page that turns into
// a 404 with the same body is a new version: its deletion); then it stores
// nothing (0 new bytes), records the check as Touch does, and returns that
// newest version with added == false. A new version is appended to the
// active segment and made durable (its group's fsync of the segment)
// before the index learns about it, so the index never names a partial
// record. It returns ErrQuota, storing nothing, when the new record would
// exceed Options.Quota, and an error wrapping ErrFailed once a write or
// sync has failed (the store must be reopened).
func (s *Store) Put(ctx context.Context, c Capture) (Version, bool, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	s.adding.Add(1)
	defer s.adding.Add(-1)
	if s.closed.Load() {
		return Version{}, false, errors.New("archive put: store closed")
	}
	if err := s.failure(); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	if err := checkCapture(&c); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w: %w", ErrBadCapture, err)
	}
	if len(c.Request) > 0 && !validRequestHead(c.Request) {
		c.Request = nil // kept only as sent, whole (request.go)
	}
	var state []byte
	if c.State != nil {
		var err error
		// Every state Put writes goes with a version of c.URL: the new
		// one, or the newest it equals.
		if state, err = encodeState(c.URL, *c.State, true); err != nil {
			return Version{}, false, fmt.Errorf("archive put: crawl state: %w", err)
		}
	}
	t := c.Time.UTC().Round(0)
	k := id.OfString(c.URL)
	d := c.Digest
	if d.IsZero() {
		d = id.Sum(c.Body)
	}
	lk := &s.keyLocks[k[id.Size-1]]
	lk.Lock()
	defer lk.Unlock()
	if s.urlp.covers(c.URL, t) { // checked under the lock: PurgeURLs takes every one
		// A capture that cannot be stored: the crawler drops the entry
		// rather than retrying it.
		return Version{}, false, fmt.Errorf("archive put %s: %w: %w", c.URL, ErrBadCapture, ErrPurged)
	}
	// Counted only once the key's lock is held: a Put waiting for another
	// Put of its key, which waits for its group, must not hold the group.
	giveUp, indexed := s.beginWrite(), false
	defer func() {
		if !indexed {
			giveUp()
		}
	}()

	// A URL's first version (every Put of a first crawl) is told by one
	// point read, which the bloom filter answers, before positioning an
	// iterator in every level for the newest version.
	var prev Version
	has, err := s.hasVersion(c.URL)
	if has {
		prev, err = s.newest(k)
	}
	first := !has || errors.Is(err, ErrNotFound)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	if !first && prev.Digest == d && prev.Status == c.Status {
		s.unchanged.Add(1)
		if err := s.touch(k, t, false); err != nil {
			return Version{}, false, fmt.Errorf("archive put: %w", err)
		}
		if err := s.putState(c.URL, state); err != nil {
			return Version{}, false, fmt.Errorf("archive put: crawl state: %w", err)
		}
		return prev, false, nil
	}

	if !first {
		// The same payload captured at the same instant as an older version
		// (possible only with replayed input) is that version.
		if v, err := s.versionAt(k, t, d); err == nil {
			s.unchanged.Add(1)
			if err := s.putState(c.URL, state); err != nil {
				return Version{}, false, fmt.Errorf("archive put: crawl state: %w", err)
			}
			return v, false, nil
		}
	}
	head, block, err := responseBlock(&c)
	if err != nil {
		return Version{}, false, fmt.Errorf("archive put %s: %w", c.URL, err)
	}
	if err := sign(s.signer, &c, t, d, block); err != nil {
		return Version{}, false, fmt.Errorf("archive put %s: %w", c.URL, err)
	}
	v := Version{
		URL: c.URL, Key: k, Digest: d, Day: s.DayOf(t), Time: t, Status: c.Status,
		ContentType: MediaType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), Peer: c.Peer, Browser: c.Browser,
	}
	if !first {
		if v.Seq, err = s.nextSeq(k, d, v.Day); err != nil {
			return Version{}, false, fmt.Errorf("archive put: %w", err)
		}
	}
	rec, err := s.encode(&c, t, d, head, block)
	if err != nil {
		return Version{}, false, fmt.Errorf("archive put %s: %w", c.URL, err)
	}
	seg, err := s.store(&v, rec)
	if err != nil {
		return Version{}, false, fmt.Errorf("archive put %s: %w", c.URL, err)
	}
	indexed = true // index ends the write, whatever it returns
	if err := s.index(v, seg, first, state, nil); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	if fn := s.added.Load(); fn != nil {
		(*fn)(v)
	}
	return v, true, nil
}

// nextSeq returns the Seq of a new version of k with digest d on day:
// one more than the highest of those the index holds, 0 if none.
func (s *Store) nextSeq(k id.ID, d id.ID, day int64) (int, error) {
	// Only the versions captured that day can share its (digest, day).
	from := time.Unix(day*s.day, 0)
	it := s.db.NewIterator(&util.Range{
		Start: encTime(versionPrefix(k), from),
		Limit: encTime(versionPrefix(k), from.Add(time.Duration(s.day)*time.Second)),
	}, nil)
	defer it.Release()
	seq := 0
	for it.Next() {
		if !bytes.Equal(it.Key()[1+id.Size+8:], d[:]) {
			continue
		}
		sv, err := decodeStored(it.Key(), it.Value())
		if err != nil {
			return 0, err
		}
		if sv.Day == day {
			seq = max(seq, sv.Seq+1)
		}
	}
	return seq, it.Error()
}

// encode returns c's WARC response record, compressed for the active
// segments, and offers it to the dictionary trainer.
func (s *Store) encode(c *Capture, t time.Time, d id.ID, head []byte, block id.ID) (*record, error) {
	plain, err := plainResponse(c, t, d, head, block)
	if err != nil {
		return nil, err
	}
	s.trainer.offer(plain)
	return s.compress(plain, s.zd.Load()), nil
}

// record is one WARC record on its way to a segment: uncompressed, and
// compressed for segments of dictionary zd (nil: as a gzip member, for
// .warc.gz segments).
type record struct {
	plain []byte
	data  []byte
	zd    *zdict
}

// compress returns plain compressed for segments of dictionary zd.
func (s *Store) compress(plain []byte, zd *zdict) *record {
	r := &record{plain: plain, zd: zd}
	if zd != nil {
		r.data = zd.encoder().EncodeAll(plain, make([]byte, 0, len(plain)/4+64))
		return r
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	// Writing to a bytes.Buffer cannot fail.
	_ = s.gz.compress(buf, plain)
	r.data = bytes.Clone(buf.Bytes())
	return r
}

// store claims the record's size from the quota and appends it to the
// active segment, setting v's File, Offset and Size. The quota claim ends
// when the version is indexed (enqueueLocked) or, on error, here.
func (s *Store) store(v *Version, rec *record) (*segment, error) {
	size := int64(len(rec.data))
	if err := s.disk.admit(size); err != nil {
		return nil, err
	}
	if err := s.reserve(size, v.Peer, v.Key); err != nil {
		return nil, err
	}
	seg, off, err := s.appendRecord(rec)
	if err != nil {
		s.unreserve(size, v.Peer, v.Key)
		return nil, err
	}
	v.File, v.Offset, v.Size = seg.rel(), off, size
	return seg, nil
}

// putState writes an encoded crawl state of url (nothing when nil),
// unsynced as SetState does.
func (s *Store) putState(url string, state []byte) error {
	if state == nil {
		return nil
	}
	if err := s.disk.admit(int64(len(state))); err != nil {
		return err
	}
	return s.db.Put(crawlStateKey(url), state, nil)
}

// reserve claims size bytes of the quota, of its signer peer's share
// (share.go) and of its key's replicated range's (rangeshare.go), for a
// record about to be written.
func (s *Store) reserve(size int64, peer string, key id.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkShareLocked(peer, size); err != nil {
		return err
	}
	if err := s.checkRangeLocked(key, peer, size); err != nil {
		return err
	}
	if s.quota > 0 && s.ctr.bytes+s.pending+size > s.quota {
		s.refusedN.Add(1)
		if !s.quotaHit.Swap(true) {
			s.log.Warn("disk quota reached: no new versions will be stored",
				"bytes", s.ctr.bytes, "quota", s.quota)
		}
		return ErrQuota
	}
	s.pending += size
	if s.shareCap(peer) > 0 {
		s.signerPending[peer] += size
	}
	s.addRangeLocked(key, size, true)
	return nil
}

func (s *Store) unreserve(size int64, peer string, key id.ID) {
	s.mu.Lock()
	s.pending -= size
	if s.shareCap(peer) > 0 {
		s.signerPending[peer] -= size
	}
	s.addRangeLocked(key, -size, true)
	s.mu.Unlock()
}

// beginWrite counts a Put or Import as in progress until index queues its
// version (enqueueLocked) or the caller gives it up (the function
// returned, to be called unless index was reached). The committer lets a
// group wait for such writes (Options.CommitWindow).
func (s *Store) beginWrite() (giveUp func()) {
	s.mu.Lock()
	s.writing++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.endWriteLocked()
		s.mu.Unlock()
	}
}

// endWriteLocked ends a write counted by beginWrite and tells a waiting
// committer when it was the last one. The caller holds s.mu.
func (s *Store) endWriteLocked() {
	s.writing--
	if s.writing == 0 {
		select {
		case s.gc.joined <- struct{}{}:
		default:
		}
	}
}

// Touch records that url was checked at t and found unchanged (for
// example a 304 answer), so that exports can emit a revisit record for
// that day. It keeps the last check per URL and day; exports ignore checks
// on days on which a version was stored. It returns ErrNotFound if url has
// no version.
func (s *Store) Touch(ctx context.Context, url string, t time.Time) error {
	return s.TouchState(ctx, url, t, CrawlState{})
}

// TouchState is Touch for a URL whose crawl state st was read from this
// store by State before the check (the crawler's conditional GET). When
// st.Versioned says that state was written with a version of url and no
// purge has run since the read, url has a version still (only a purge
// removes versions, and it deletes the state too), and TouchState does not
// look it up: on a revisit day most fetches are 304s, and at a million
// URLs that look-up is a point read that misses the index's caches. It
// holds url's key lock, which every purge holds while it runs, so a
// check is never written for a URL a purge left without versions.
func (s *Store) TouchState(ctx context.Context, url string, t time.Time, st CrawlState) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("archive touch: %w", err)
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return fmt.Errorf("archive touch: time %v out of range", t)
	}
	k := id.OfString(url)
	lk := &s.keyLocks[k[id.Size-1]]
	lk.Lock()
	defer lk.Unlock()
	if st.Versioned == 0 || st.Versioned-1 != s.purges.Load() {
		s.touchLookups.Add(1)
		if ok, err := s.hasVersion(url); err != nil {
			return fmt.Errorf("archive touch: %w", err)
		} else if !ok {
			return fmt.Errorf("archive touch: %w", ErrNotFound)
		}
	}
	if err := s.touch(k, t.UTC().Round(0), true); err != nil {
		return fmt.Errorf("archive touch: %w", err)
	}
	return nil
}

// touch writes the check record — its time, and a byte 1 when the server
// answered 304 Not Modified; the crawler's checks are cheap to lose, so
// the write is not synced.
func (s *Store) touch(k id.ID, t time.Time, notModified bool) error {
	v := encTime(nil, t)
	if notModified {
		v = append(v, 1)
	}
	if err := s.disk.admit(int64(len(v))); err != nil {
		return err
	}
	return s.db.Put(touchKey(k, s.DayOf(t)), v, nil)
}

// versionAt returns the version of k captured at t with payload digest d,
// or ErrNotFound.
func (s *Store) versionAt(k id.ID, t time.Time, d id.ID) (Version, error) {
	key := versionKey(k, t, d)
	val, err := s.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return Version{}, ErrNotFound
	}
	if err != nil {
		return Version{}, err
	}
	return s.decodeVersion(key, val)
}
