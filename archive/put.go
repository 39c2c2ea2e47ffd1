package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/syndtr/goleveldb/leveldb"

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

// contentType returns the media type of a Content-Type value, without
// parameters, or the value itself if it does not parse.
func contentType(v string) string {
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
// no file (0 new bytes), records the check as Touch does, and returns that newest version
// with added == false. A new version is written atomically (temporary file,
// fsync or its group's syncfs, rename) before the index learns about it, so the index never
// points at a partial file. It returns ErrQuota, storing nothing, when the
// new file would exceed Options.Quota.
func (s *Store) Put(ctx context.Context, c Capture) (Version, bool, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	if s.closed.Load() {
		return Version{}, false, errors.New("archive put: store closed")
	}
	if err := checkCapture(&c); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	var state []byte
	if c.State != nil {
		var err error
		if state, err = encodeState(c.URL, *c.State); err != nil {
			return Version{}, false, fmt.Errorf("archive put: crawl state: %w", err)
		}
	}
	t := c.Time.UTC().Round(0)
	k := id.OfString(c.URL)
	d := c.Digest
	if d.IsZero() {
		if err := s.cpu.DoBytes(ctx, len(c.Body), func() { d = id.Sum(c.Body) }); err != nil {
			return Version{}, false, fmt.Errorf("archive put: %w", err)
		}
	}
	lk := &s.keyLocks[k[id.Size-1]]
	lk.Lock()
	defer lk.Unlock()
	// Counted only once the key's lock is held: a Put waiting for another
	// Put of its key, which waits for its group, must not hold the group.
	giveUp, indexed := s.beginWrite(), false
	defer func() {
		if !indexed {
			giveUp()
		}
	}()

	prev, err := s.newest(k)
	first := errors.Is(err, ErrNotFound)
	if err != nil && !first {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	if !first && prev.Digest == d && prev.Status == c.Status {
		s.unchanged.Add(1)
		if err := s.touch(k, t); err != nil {
			return Version{}, false, fmt.Errorf("archive put: %w", err)
		}
		if err := s.putState(k, state); err != nil {
			return Version{}, false, fmt.Errorf("archive put: crawl state: %w", err)
		}
		return prev, false, nil
	}

	if !first {
		// The same payload captured at the same instant as an older version
		// (possible only with replayed input) is that version.
		if v, err := s.versionAt(k, t, d); err == nil {
			s.unchanged.Add(1)
			if err := s.putState(k, state); err != nil {
				return Version{}, false, fmt.Errorf("archive put: crawl state: %w", err)
			}
			return v, false, nil
		}
	}
	if err := sign(s.signer, &c, t, d); err != nil {
		return Version{}, false, fmt.Errorf("archive put %s: %w", c.URL, err)
	}
	e := Entry{Key: k, Digest: d, Day: s.DayOf(t)}
	size, deferred, mv, err := s.write(ctx, &c, t, &e)
	if err != nil {
		return Version{}, false, fmt.Errorf("archive put %s: %w", c.URL, err)
	}
	v := Version{
		URL: c.URL, Key: k, Digest: d, Day: e.Day, Time: t, Status: c.Status,
		ContentType: contentType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), File: e.Path(),
	}
	indexed = true // index ends the write, whatever it returns
	if err := s.index(v, e, size, first, deferred, mv, state); err != nil {
		return Version{}, false, fmt.Errorf("archive put: %w", err)
	}
	return v, true, nil
}

// putState writes an encoded crawl state of k (nothing when nil), unsynced
// as SetState does.
func (s *Store) putState(k id.ID, state []byte) error {
	if state == nil {
		return nil
	}
	return s.db.Put(stateKey(k), state, nil)
}

// write encodes c as the version file of e, claims its size from the
// quota and writes it unsynced to tmp/ (see placeFile), all of it on the
// CPU gate; e.Seq is raised past the files of the same name already
// there. It returns the file's size, whether its compression was
// deferred (deferred.go) and its pending rename.
func (s *Store) write(ctx context.Context, c *Capture, t time.Time, e *Entry) (size int64, deferred bool, mv *pendingFile, err error) {
	if gerr := s.cpu.Do(ctx, func() { size, deferred, mv, err = s.encodeAndPlace(c, t, e) }); gerr != nil {
		return 0, false, nil, gerr
	}
	return size, deferred, mv, err
}

// encodeAndPlace is write's work, on the gate. It defers the compression
// when other processing is waiting for the gate at that moment.
func (s *Store) encodeAndPlace(c *Capture, t time.Time, e *Entry) (int64, bool, *pendingFile, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	deferred := s.shouldDefer()
	if err := s.gz.encodeResponse(buf, c, t, e.Digest, deferred); err != nil {
		return 0, false, nil, err
	}
	size := int64(buf.Len())
	err := s.reserveOr(size, deferred)
	if errors.Is(err, ErrQuota) && deferred {
		// Stored uncompressed, the version would not fit; compressed it
		// might: the quota refuses only what cannot be stored at all.
		deferred = false
		buf.Reset()
		if err := s.gz.encodeResponse(buf, c, t, e.Digest, false); err != nil {
			return 0, false, nil, err
		}
		size = int64(buf.Len())
		err = s.reserve(size)
	}
	if err != nil {
		return 0, false, nil, err
	}
	if deferred {
		s.noteDeferred()
	}
	created, err := s.ensureDir(e.Path())
	if err != nil {
		s.unreserve(size)
		return 0, false, nil, err
	}
	// A directory this Put just made holds no file of this key (Puts of
	// one key are serialized), so only an older one needs looking at.
	for !created && s.exists(e.Path()) {
		e.Seq++
	}
	mv, err := s.placeFile(e.Path(), buf.Bytes())
	if err != nil {
		s.unreserve(size)
		return 0, false, nil, err
	}
	return size, deferred, mv, nil
}

// reserve claims size bytes of the quota for a file about to be written.
func (s *Store) reserve(size int64) error { return s.reserveOr(size, false) }

// reserveOr is reserve; with retry set, a refusal is not counted or
// logged, because the caller will try a smaller encoding.
func (s *Store) reserveOr(size int64, retry bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quota > 0 && s.ctr.bytes+s.pending+size > s.quota {
		if retry {
			return ErrQuota
		}
		s.refusedN.Add(1)
		if !s.quotaHit.Swap(true) {
			s.log.Warn("disk quota reached: no new versions will be stored",
				"bytes", s.ctr.bytes, "quota", s.quota)
		}
		return ErrQuota
	}
	s.pending += size
	return nil
}

func (s *Store) unreserve(size int64) {
	s.mu.Lock()
	s.pending -= size
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

func (s *Store) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(s.dir, filepath.FromSlash(rel)))
	return err == nil
}

// ensureDir makes the directory of the file rel unless this store made or
// saw it before, and reports whether this call created it. One mkdir
// suffices when the parent exists (the usual case): no stat first.
func (s *Store) ensureDir(rel string) (bool, error) {
	dir := filepath.Dir(filepath.Join(s.dir, filepath.FromSlash(rel)))
	if _, ok := s.dirs.Load(dir); ok {
		return false, nil
	}
	created := true
	err := os.Mkdir(dir, 0o755)
	switch {
	case errors.Is(err, fs.ErrExist):
		created, err = false, nil
	case errors.Is(err, fs.ErrNotExist):
		err = os.MkdirAll(dir, 0o755) // the parent is missing too
	}
	if err != nil {
		return false, err
	}
	s.dirs.Store(dir, struct{}{})
	return created, nil
}

// pendingFile is a version file written to dir/tmp that its index group
// renames to final once the group's files are durable: by the group's
// syncfs, or already (synced) when written without group sync.
type pendingFile struct {
	tmp, final string
	synced     bool
}

// placeFile stores data as the file rel, whose directory the caller has
// made (ensureDir). It writes a temporary file in dir/tmp; with group sync
// it returns that file unsynced, for the index group to sync and rename
// (commit.go); otherwise it fsyncs it (unless NoSync), renames it into
// place and returns nil. The rename itself is made durable by the synced
// index write that follows it (see doc.go). On error it leaves no file.
func (s *Store) placeFile(rel string, data []byte) (*pendingFile, error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), filepath.Base(rel)+".*")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && !s.groupSync && !s.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	final := filepath.Join(s.dir, filepath.FromSlash(rel))
	switch {
	case err != nil:
	case s.groupSync:
		return &pendingFile{tmp: tmp, final: final}, nil
	default:
		err = renameFile(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return nil, err
}

// Touch records that url was checked at t and found unchanged (for
// example a 304 answer), so that exports can emit a revisit record for
// that day. It keeps the last check per URL and day; exports ignore checks
// on days on which a version was stored. It returns ErrNotFound if url has
// no version.
func (s *Store) Touch(ctx context.Context, url string, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("archive touch: %w", err)
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return fmt.Errorf("archive touch: time %v out of range", t)
	}
	k := id.OfString(url)
	if _, err := s.newest(k); err != nil {
		return fmt.Errorf("archive touch: %w", err)
	}
	if err := s.touch(k, t.UTC().Round(0)); err != nil {
		return fmt.Errorf("archive touch: %w", err)
	}
	return nil
}

// touch writes the check record; the crawler's checks are cheap to lose,
// so the write is not synced.
func (s *Store) touch(k id.ID, t time.Time) error {
	return s.db.Put(touchKey(k, s.DayOf(t)), encTime(nil, t), nil)
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
	return decodeVersion(key, val)
}
