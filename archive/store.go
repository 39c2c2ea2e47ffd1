package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	ldberrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/cpugate"
	"github.com/herod-archive/herod/internal/id"
)

// DefaultCommitWindow is Options.CommitWindow when zero: a Put waits at
// most that much longer than its own sync.
const DefaultCommitWindow = 20 * time.Millisecond

// Options configure a Store. The zero value is a valid configuration.
type Options struct {
	// DayLength is the length of a crawl day; zero means 24h. It is rounded
	// down to whole seconds and must be at least one second. Version.Day is
	// Time.Unix() divided by it (rounded toward minus infinity). All
	// replicas of a ring must use the same value.
	DayLength time.Duration
	// Quota bounds the bytes of version files on disk (apparent size); zero
	// means unlimited. A Put or Import that would exceed it returns ErrQuota
	// and stores nothing.
	Quota int64
	// NoSync skips the fsync of each version file and of each index write.
	// Only for bulk loads and benchmarks: a power loss may then lose or
	// truncate recent files (Fsck reports them, Reindex quarantines them).
	NoSync bool
	// GzipLevel is the gzip level of new version files (1-9); zero means
	// DefaultGzipLevel.
	GzipLevel int
	// CompressNow makes every Put compress at GzipLevel, even when the
	// CPU gate is behind (no deferred compression; see deferred.go).
	CompressNow bool
	// RecompressAfter is how long the store must have written no deferred
	// file, with nothing waiting for the gate, before its background loop
	// recompresses deferred files; zero means DefaultRecompressAfter, a
	// negative value runs no loop (Recompress must then be called).
	RecompressAfter time.Duration
	// CommitWindow bounds how long an index group waits for the Puts and
	// Imports already under way when it is about to be synced: they join
	// it, so that concurrent writers share one sync instead of the first
	// of them syncing alone. The group is synced as soon as none is under
	// way, so a lone writer never waits. Zero means DefaultCommitWindow;
	// negative means never wait; with NoSync groups never wait.
	CommitWindow time.Duration
	// CPU, if set, runs a Put's hashing, compressing and writing of its
	// version file on the gate's low-priority workers; the Put waits for
	// locks and its index group in its own goroutine, so that a crawler
	// can leave a processor to its fetches (see package cpugate). Nil: all
	// in the caller.
	CPU *cpugate.Gate
	// Signer, if set, signs every version Put adds (provenance.go).
	Signer Signer
	// Verifier, if set, makes Import refuse records that are not signed
	// by their fetcher, or signed by a peer Purge refused. Import always
	// refuses capture times beyond now plus MaxClockSkew.
	Verifier Verifier
	// Now tells the time for that check; nil means time.Now.
	Now func() time.Time
	// Logger receives the store's events; nil discards them.
	Logger *slog.Logger
}

// Stats is a snapshot of the store's totals, JSON-serializable for status
// pages.
type Stats struct {
	Versions     int64 `json:"versions"`     // stored versions (= version files)
	URLs         int64 `json:"urls"`         // URLs with at least one version
	Bytes        int64 `json:"bytes"`        // apparent size of all version files
	PayloadBytes int64 `json:"payloadBytes"` // sum of payload lengths
	Quota        int64 `json:"quota"`        // configured quota, 0 = unlimited
	QuotaReached bool  `json:"quotaReached"` // a version was refused for lack of quota
	Refused      int64 `json:"refused"`      // versions refused by the quota since Open
	Unchanged    int64 `json:"unchanged"`    // Puts whose payload equalled the newest version, since Open
	Corrupt      int64 `json:"corrupt"`      // Reads that failed verification since Open
	// Deferred counts version files stored with deferred compression
	// (uncompressed, while the processing was behind) that await
	// recompression at the store's level (deferred.go).
	Deferred int64 `json:"deferred"`
}

// Store is a directory of version files plus their goleveldb index. See
// doc.go for the layout and the concurrency contract.
type Store struct {
	dir    string
	day    int64 // day length in seconds
	quota  int64
	noSync bool
	// groupSync: version files are written unsynced to dir/tmp and the
	// committer makes each index group's files durable with one syncfs
	// before renaming them into place (commit.go).
	groupSync bool
	log       *slog.Logger
	db        *leveldb.DB
	wo        *opt.WriteOptions
	gz        *gzipPool
	cpu       *cpugate.Gate

	signer   Signer           // Options.Signer
	verifier Verifier         // Options.Verifier
	now      func() time.Time // Options.Now, defaulted
	refused  peerSet          // peers whose records Import refuses (refused-peers)

	compressNow bool          // Options.CompressNow
	after       time.Duration // Options.RecompressAfter, defaulted
	busy        func() bool   // the processing is behind: defer compression (deferred.go)
	rc          deferredState

	keyLocks [256]sync.Mutex // serialize Puts of one key (striped by key[19])
	dirs     sync.Map        // leaf directories known to exist

	mu      sync.Mutex    // guards ctr, pending, writing, gc, and the read-modify-write of dir hashes
	ctr     counters      // totals, including index groups not yet committed
	pending int64         // bytes of files being written, reserved against the quota
	writing int           // Puts and Imports in progress whose version is not yet in an index group (beginWrite)
	window  time.Duration // Options.CommitWindow; 0 with NoSync (no sync to share)
	gc      groupCommit

	quotaHit  atomic.Bool
	refusedN  atomic.Int64
	unchanged atomic.Int64
	corrupt   atomic.Int64
	closed    atomic.Bool
}

// Open opens or creates the store in dir: dir/objects holds the version
// files, dir/index the goleveldb index, dir/tmp files being written.
// Leftover temporary files of a crash are removed, and a missing index is
// rebuilt from the files (see Reindex).
func Open(dir string, o Options) (*Store, error) {
	s, err := newStore(dir, o, true)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "index")); errors.Is(err, os.ErrNotExist) {
		if ents, _ := os.ReadDir(filepath.Join(dir, objectsDir)); len(ents) > 0 {
			s.log.Warn("index missing: rebuilding it from the version files", "dir", dir)
			if _, err := Reindex(context.Background(), dir, o); err != nil {
				return nil, fmt.Errorf("archive open: %w", err)
			}
		}
	}
	if err := s.openIndex(filepath.Join(dir, "index")); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore checks o and prepares dir; clean removes leftover temporary
// files.
func newStore(dir string, o Options, clean bool) (*Store, error) {
	if o.DayLength == 0 {
		o.DayLength = 24 * time.Hour
	}
	if o.DayLength < time.Second {
		return nil, fmt.Errorf("archive open: day length %v is shorter than a second", o.DayLength)
	}
	if o.GzipLevel == 0 {
		o.GzipLevel = DefaultGzipLevel
	}
	if o.GzipLevel < 1 || o.GzipLevel > 9 {
		return nil, fmt.Errorf("archive open: gzip level %d not in 1-9", o.GzipLevel)
	}
	if o.Quota < 0 {
		return nil, fmt.Errorf("archive open: negative quota %d", o.Quota)
	}
	if o.CommitWindow == 0 {
		o.CommitWindow = DefaultCommitWindow
	}
	if o.NoSync {
		o.CommitWindow = 0
	}
	if o.RecompressAfter == 0 {
		o.RecompressAfter = DefaultRecompressAfter
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		dir:       dir,
		day:       int64(o.DayLength / time.Second),
		quota:     o.Quota,
		noSync:    o.NoSync,
		groupSync: groupFileSync && !o.NoSync,
		log:       log,
		wo:        &opt.WriteOptions{Sync: !o.NoSync},
		gz:        newGzipPool(o.GzipLevel),
		cpu:       o.CPU,
		window:    o.CommitWindow,

		compressNow: o.CompressNow,
		after:       o.RecompressAfter,
		signer:      o.Signer,
		verifier:    o.Verifier,
		now:         o.Now,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.busy = func() bool { return s.cpu.Waiting() > 0 }
	for _, d := range []string{dir, filepath.Join(dir, objectsDir), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("archive open: %w", err)
		}
	}
	refused, err := loadRefused(dir)
	if err != nil {
		return nil, fmt.Errorf("archive open: %w", err)
	}
	s.refused.m = refused
	if !clean {
		return s, nil
	}
	if err := s.cleanTemp(); err != nil {
		return nil, fmt.Errorf("archive open: %w", err)
	}
	return s, nil
}

// cleanTemp removes files a crash left in dir/tmp: they were never renamed
// into place, so nothing refers to them.
func (s *Store) cleanTemp() error {
	tmp := filepath.Join(s.dir, "tmp")
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		s.log.Info("removed temporary files of an interrupted write", "count", len(ents))
	}
	return nil
}

func (s *Store) openIndex(path string) error {
	db, err := leveldb.OpenFile(path, nil)
	if ldberrors.IsCorrupted(err) {
		s.log.Warn("index corrupted, recovering; run reindex to rebuild it from the files", "err", err)
		db, err = leveldb.RecoverFile(path, nil)
	}
	if err != nil {
		return fmt.Errorf("archive open index: %w", err)
	}
	s.db = db
	val, err := db.Get(metaStatsKey, nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
	case err != nil:
		db.Close()
		return fmt.Errorf("archive open index: %w", err)
	default:
		if s.ctr, err = decodeCounters(val); err != nil {
			db.Close()
			return fmt.Errorf("archive open index: %w", err)
		}
	}
	if s.quota > 0 && s.ctr.bytes >= s.quota {
		s.quotaHit.Store(true)
		s.log.Warn("disk quota reached: no new versions will be stored", "bytes", s.ctr.bytes, "quota", s.quota)
	}
	if err := s.countDeferred(); err != nil {
		db.Close()
		return fmt.Errorf("archive open index: %w", err)
	}
	s.startCommitter()
	s.startRecompressor()
	return nil
}

// Close closes the index. Calls after Close fail; Close is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stopRecompressor()
	s.rc.mu.Lock() // a Recompress a caller started ends first
	s.rc.mu.Unlock()
	s.stopCommitter()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("archive close: %w", err)
	}
	return nil
}

// Dir returns the store's root directory.
func (s *Store) Dir() string { return s.dir }

// DayOf returns the crawl day of t under the store's day length.
func (s *Store) DayOf(t time.Time) int64 {
	u := t.Unix()
	d := u / s.day
	if u%s.day < 0 {
		d--
	}
	return d
}

// Stats returns a snapshot of the store's totals.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	c := s.ctr
	s.mu.Unlock()
	return Stats{
		Versions:     c.versions,
		URLs:         c.urls,
		Bytes:        c.bytes,
		PayloadBytes: c.payload,
		Quota:        s.quota,
		QuotaReached: s.quotaHit.Load(),
		Refused:      s.refusedN.Load(),
		Unchanged:    s.unchanged.Load(),
		Corrupt:      s.corrupt.Load(),
		Deferred:     s.rc.n.Load(),
	}
}

// Versions returns the versions of url, oldest first; an empty slice and
// a nil error if there are none.
func (s *Store) Versions(ctx context.Context, url string) ([]Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive versions: %w", err)
	}
	it := s.db.NewIterator(util.BytesPrefix(versionPrefix(id.OfString(url))), nil)
	defer it.Release()
	var vs []Version
	for it.Next() {
		v, err := decodeVersion(it.Key(), it.Value())
		if err != nil {
			return nil, fmt.Errorf("archive versions: %w", err)
		}
		vs = append(vs, v)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("archive versions: %w", err)
	}
	return vs, nil
}

// At returns the newest version of url whose Time is not after t, or
// ErrNotFound.
func (s *Store) At(ctx context.Context, url string, t time.Time) (Version, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, fmt.Errorf("archive at: %w", err)
	}
	k := id.OfString(url)
	it := s.db.NewIterator(util.BytesPrefix(versionPrefix(k)), nil)
	defer it.Release()
	var ok bool
	switch {
	case t.Before(minTime):
		ok = false
	case !t.Before(maxTime):
		ok = it.Last()
	case it.Seek(encTime(versionPrefix(k), t.Add(time.Nanosecond))):
		ok = it.Prev()
	default:
		ok = it.Last()
	}
	if err := it.Error(); err != nil {
		return Version{}, fmt.Errorf("archive at: %w", err)
	}
	if !ok {
		return Version{}, ErrNotFound
	}
	v, err := decodeVersion(it.Key(), it.Value())
	if err != nil {
		return Version{}, fmt.Errorf("archive at: %w", err)
	}
	return v, nil
}

// Get returns the version a reader asking for url at time t should see —
// the newest not after t or, when every version is newer, the oldest — and
// its verified capture. It returns an error wrapping ErrNotFound if url has
// no version. (It is the gateway's dated replay in one call.)
func (s *Store) Get(ctx context.Context, url string, t time.Time) (Version, *Capture, error) {
	v, err := s.At(ctx, url, t)
	if errors.Is(err, ErrNotFound) {
		var vs []Version
		if vs, err = s.Versions(ctx, url); err == nil && len(vs) == 0 {
			err = ErrNotFound
		} else if err == nil {
			v = vs[0]
		}
	}
	if err != nil {
		return Version{}, nil, fmt.Errorf("archive get %s: %w", url, err)
	}
	c, err := s.Read(ctx, v)
	if err != nil {
		return Version{}, nil, err
	}
	return v, c, nil
}

// newest returns the newest version of key, or ErrNotFound.
func (s *Store) newest(k id.ID) (Version, error) {
	it := s.db.NewIterator(util.BytesPrefix(versionPrefix(k)), nil)
	defer it.Release()
	if !it.Last() {
		if err := it.Error(); err != nil {
			return Version{}, err
		}
		return Version{}, ErrNotFound
	}
	return decodeVersion(it.Key(), it.Value())
}

// Read reads the file of v and verifies it: gzip and WARC framing, block
// and payload digests, and that it is the capture v describes. A mismatch
// returns an error wrapping ErrCorrupt; a missing file ErrNotFound.
func (s *Store) Read(ctx context.Context, v Version) (*Capture, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive read: %w", err)
	}
	e, err := parsePath(v.File)
	if err != nil {
		return nil, fmt.Errorf("archive read: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(v.File)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("archive read %s: %w", v.File, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("archive read: %w", err)
	}
	f, err := decodeMember(data)
	if err == nil {
		err = checkEntry(e, f, v.URL)
	}
	if err != nil {
		s.corrupt.Add(1)
		s.log.Error("corrupt version file", "file", v.File, "err", err)
		return nil, fmt.Errorf("archive read %s: %w", v.File, err)
	}
	return &f.capture, nil
}

// checkEntry verifies that a decoded file is the one its name promises.
func checkEntry(e Entry, f *decodedFile, url string) error {
	if id.OfString(f.capture.URL) != e.Key || (url != "" && f.capture.URL != url) {
		return fmt.Errorf("%w: file holds %q", ErrCorrupt, f.capture.URL)
	}
	if f.digest != e.Digest {
		return fmt.Errorf("%w: payload digest differs from file name", ErrCorrupt)
	}
	return nil
}

// readRaw returns the bytes of a version file.
func (s *Store) readRaw(rel string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	return data, err
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
