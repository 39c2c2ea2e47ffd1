package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	ldberrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

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
	// SignerShare is the share (0-1] of Quota that the versions signed by
	// any one peer other than Signer may take (share.go); zero means
	// DefaultSignerShare, 1 no bound. Only with a Quota.
	SignerShare float64
	// RangeShare is the share (0-1] of Quota that the versions of any one
	// range the node replicates for another owner (SetRanges) may take,
	// except the store's own fetches; zero means DefaultRangeShare, 1 no
	// bound. Only with a Quota.
	RangeShare float64
	// DiskReserve is the free space the store keeps on its file system:
	// a write that would leave less returns ErrDiskFull, writing nothing
	// (diskfull.go). Zero means DefaultDiskReserve; negative means no
	// check.
	DiskReserve int64
	// Quota bounds the bytes of the records of stored versions; zero
	// means unlimited. A Put or Import that would exceed it returns ErrQuota
	// and stores nothing.
	Quota int64
	// NoSync skips the fsyncs of segments, of their directory and of index
	// writes. Only for bulk loads and benchmarks: a power loss may then
	// lose recent versions (Open cuts segments to what the index commits).
	NoSync bool
	// GzipLevel is the gzip level of new records in .warc.gz segments and
	// of records leaving the store (replication, export) (1-9); zero means
	// DefaultGzipLevel.
	GzipLevel int
	// DictSamples is the number of records the store writes before it
	// trains the zstd dictionary of its .warc.zst segments on them
	// (zstd.go); zero means DefaultDictSamples, negative means never (new
	// records go to .warc.gz segments).
	DictSamples int
	// DictWait is how many more records (written or imported) a store
	// without a dictionary waits, once its samples are complete, for a
	// peer's dictionary to adopt (adopt.go) before it trains its own;
	// zero trains at once. A node joining a ring sets it: the ring's
	// first store trains, the others adopt.
	DictWait int
	// SegmentSize bounds a segment file: a record that would take it past
	// this size goes to a new segment. Zero means DefaultSegmentSize.
	SegmentSize int64
	// CommitWindow bounds how long an index group waits for the Puts and
	// Imports already under way when it is about to be synced: they join
	// it, so that concurrent writers share one sync instead of the first
	// of them syncing alone. The group is synced as soon as none is under
	// way, so a lone writer never waits. Zero means DefaultCommitWindow;
	// negative means never wait; with NoSync groups never wait.
	CommitWindow time.Duration
	// Signer, if set, signs every version Put adds (provenance.go).
	Signer Signer
	// Verifier, if set, makes Import refuse records that are not signed
	// by their fetcher, or signed by a peer Purge refused. Import always
	// refuses capture times beyond now plus MaxClockSkew.
	Verifier Verifier
	// Now tells the time for that check; nil means time.Now.
	Now func() time.Time
	// MaxBody bounds the payload of a record Import accepts from a peer
	// (the node's --max-body): a larger one is refused (ErrCorrupt)
	// before it is decompressed. Zero means the reader's own bound
	// (256 MiB).
	MaxBody int64
	// Logger receives the store's events; nil discards them.
	Logger *slog.Logger

	// fs is the file system of segments; nil means the operating
	// system's (tests inject faults through it).
	fs fileSystem
	// freeSpace reads a directory's free bytes; nil means statfs (tests
	// inject a full disk through it).
	freeSpace func(dir string) (int64, error)
}

// Stats is a snapshot of the store's totals, JSON-serializable for status
// pages.
type Stats struct {
	Versions     int64 `json:"versions"`     // stored versions
	URLs         int64 `json:"urls"`         // URLs with at least one version
	Bytes        int64 `json:"bytes"`        // bytes of the records of all versions
	PayloadBytes int64 `json:"payloadBytes"` // sum of payload lengths
	Quota        int64 `json:"quota"`        // configured quota, 0 = unlimited
	QuotaReached bool  `json:"quotaReached"` // a version was refused for lack of quota
	// AtQuota says the store is so close to its quota now that it would
	// refuse most versions (AtQuota): its node pauses crawl and
	// replication.
	AtQuota bool `json:"atQuota,omitempty"`
	// DiskFull says the file system is at the store's reserve: writes are
	// paused until space returns; DiskRefused counts the writes refused so
	// since Open.
	DiskFull    bool  `json:"diskFull,omitempty"`
	DiskRefused int64 `json:"diskRefused,omitempty"`
	// ShareRefused counts the versions refused since Open because their
	// signer's versions took their share of the quota (share.go).
	ShareRefused int64 `json:"shareRefused,omitempty"`
	// RangeRefused counts the versions refused since Open because the
	// versions of their replicated range took its share of the quota
	// (rangeshare.go).
	RangeRefused int64 `json:"rangeRefused,omitempty"`
	Refused      int64 `json:"refused"`   // versions refused by the quota since Open
	Unchanged    int64 `json:"unchanged"` // Puts whose payload equalled the newest version, since Open
	// TouchLookups counts the checks (Touch, TouchState) since Open that
	// looked their URL's version up: those without a crawl state written
	// with a version (CrawlState.Versioned) read since the last purge.
	TouchLookups int64 `json:"touchLookups,omitempty"`
	Corrupt      int64 `json:"corrupt"`  // Reads that failed verification since Open
	Segments     int   `json:"segments"` // segment files
	// Commits counts the index groups committed since Open: each a synced
	// index write and a sync of every segment it names (unless NoSync),
	// shared by the Puts and Imports that joined it (commit.go).
	Commits int64 `json:"commits,omitempty"`
	// Failed is the error that made the store refuse writes ("" if none).
	Failed string `json:"failed,omitempty"`
	// Dictionary says how the store got its own zstd dictionary since it
	// opened: "trained" on its first records, "adopted" from a peer
	// (adopt.go), or "" (none yet, or kept from an earlier run).
	Dictionary string `json:"dictionary,omitempty"`
}

// Store is a directory of segment files plus their goleveldb index. See
// doc.go for the layout and the concurrency contract.
type Store struct {
	dir     string
	day     int64 // day length in seconds
	quota   int64
	maxBody int64 // Options.MaxBody
	noSync  bool
	log     *slog.Logger
	db      *leveldb.DB
	wo      *opt.WriteOptions
	gz      *gzipPool
	fs      fileSystem

	signer   Signer           // Options.Signer
	verifier Verifier         // Options.Verifier
	now      func() time.Time // Options.Now, defaulted
	refused  peerSet          // peers whose records Import refuses (refused-peers)
	urlp     urlPurges        // URL purges: captures Put and Import refuse (purged-urls, purge.go)
	peers    peerTable        // interned signing peers of versions

	segs   segSet
	failed atomic.Pointer[error] // set by fail: writes are refused

	zd      atomic.Pointer[zdict] // dictionary of new records; nil: gzip
	trainer dictTrainer           // trains zd from the first records
	dictMu  sync.Mutex            // guards dicts and pendingDicts
	dicts   map[id.ID]*zdict      // dictionaries of segments, the store's and those fetched for imports, by hash (dicts.go)
	// pendingDicts are the dictionaries of dicts no segment holds yet,
	// oldest first.
	pendingDicts []id.ID
	ownMu        sync.Mutex // orders the adoption of a trained dictionary with Close

	keyLocks [256]sync.Mutex // serialize Puts of one key (striped by key[19])
	// purges counts the purges since Open, from a random start; each
	// adds one while it still holds every key lock (CrawlState.Versioned).
	purges atomic.Uint64
	// touchLookups counts the checks that looked their URL's version up
	// (TouchState without a usable Versioned token).
	touchLookups atomic.Int64

	mu      sync.Mutex    // guards ctr, pending, writing, gc, and the read-modify-write of dir hashes
	ctr     counters      // totals, including index groups not yet committed
	pending int64         // bytes of records being written, reserved against the quota
	writing int           // Puts and Imports in progress whose version is not yet in an index group (beginWrite)
	window  time.Duration // Options.CommitWindow; 0 with NoSync (no sync to share)
	gc      groupCommit

	disk diskGuard // free space kept on the file system (diskfull.go)

	signerShare   float64                       // Options.SignerShare, defaulted
	rangeShare    float64                       // Options.RangeShare, defaulted
	rshare        rangeShares                   // per replicated range; guarded by mu (rangeshare.go)
	rangeRefused  atomic.Int64                  // writes refused by a range's share
	signerBytes   map[string]int64              // bytes of stored versions by signer, with a quota; guarded by mu (share.go)
	signerPending map[string]int64              // bytes reserved by signer, not yet indexed; guarded by mu
	shareRefused  atomic.Int64                  // writes refused by a signer's share
	added         atomic.Pointer[func(Version)] // OnAdd's function
	imported      atomic.Pointer[func(Version)] // OnImport's function
	adding        atomic.Int64                  // Puts and imports under way (Adding)

	quotaHit  atomic.Bool
	refusedN  atomic.Int64
	unchanged atomic.Int64
	corrupt   atomic.Int64
	rewrites  atomic.Int64 // segments rewritten while open (compactOnline): offsets may have moved
	streams   streamRefs   // streamed reads by segment handle (compact.go)
	closed    atomic.Bool
}

// OnAdd makes the store call fn with every version Put adds, once the
// version is durable and indexed (Put's own return), on Put's goroutine:
// fn must not block (replication queues the version for its push). Imports
// are not reported, nor Puts that store nothing. fn replaces the previous
// function; nil stops the calls.
func (s *Store) OnAdd(fn func(Version)) {
	if fn == nil {
		s.added.Store(nil)
		return
	}
	s.added.Store(&fn)
}

// OnImport makes the store call fn with every version Import adds (a
// replica's record), once it is durable and indexed, on Import's
// goroutine: fn must not block. fn replaces the previous function; nil
// stops the calls.
func (s *Store) OnImport(fn func(Version)) {
	if fn == nil {
		s.imported.Store(nil)
		return
	}
	s.imported.Store(&fn)
}

// Adding returns how many Puts, AddImporteds and Imports are under way:
// each is counted from before its version can be seen (Versions,
// DirHash, LeafHashes) until OnAdd's or OnImport's function has returned
// for it. A caller that reads the store and then finds Adding at 0 knows
// that those functions have seen every version its read found that one
// of them added.
func (s *Store) Adding() int64 { return s.adding.Load() }

// Open opens or creates the store in dir: dir/segments holds the segment
// files, dir/index the goleveldb index. Open finishes an index swap a
// crash interrupted (swap.go), rebuilds a missing index from the segments
// (Reindex), cuts each segment to the end its index commits (segment.go)
// and moves the version files of the one-file layout, if any, into
// segments (migrate.go).
func Open(dir string, o Options) (*Store, error) {
	s, err := newStore(dir, o)
	if err != nil {
		return nil, err
	}
	if err := recoverSwap(dir); err != nil {
		return nil, fmt.Errorf("archive open: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "index")); errors.Is(err, os.ErrNotExist) {
		if ids, _ := listSegments(dir); len(ids) > 0 {
			s.log.Warn("index missing: rebuilding it from the segments", "dir", dir)
			if _, err := Reindex(context.Background(), dir, o); err != nil {
				return nil, fmt.Errorf("archive open: %w", err)
			}
		}
	}
	if err := s.openIndex(filepath.Join(dir, "index")); err != nil {
		return nil, err
	}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("archive open: migrate the one-file layout: %w", err)
	}
	return s, nil
}

// newStore checks o and prepares dir.
func newStore(dir string, o Options) (*Store, error) {
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
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SegmentSize < 0 {
		return nil, fmt.Errorf("archive open: negative segment size %d", o.SegmentSize)
	}
	if o.CommitWindow == 0 {
		o.CommitWindow = DefaultCommitWindow
	}
	if o.NoSync {
		o.CommitWindow = 0
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		dir:      dir,
		day:      int64(o.DayLength / time.Second),
		quota:    o.Quota,
		maxBody:  o.MaxBody,
		noSync:   o.NoSync,
		log:      log,
		wo:       &opt.WriteOptions{Sync: !o.NoSync},
		gz:       newGzipPool(o.GzipLevel),
		fs:       o.fs,
		window:   o.CommitWindow,
		signer:   o.Signer,
		verifier: o.Verifier,
		now:      o.Now,
	}
	s.segs.max = o.SegmentSize
	// The purge count starts anywhere: a crawl state read from another
	// opening of the store is no token here (CrawlState.Versioned).
	s.purges.Store(rand.Uint64())
	s.signerShare, s.signerPending = o.SignerShare, map[string]int64{}
	if s.rangeShare = o.RangeShare; s.rangeShare <= 0 {
		s.rangeShare = DefaultRangeShare
	}
	if s.signerShare <= 0 {
		s.signerShare = DefaultSignerShare
	}
	s.disk.dir, s.disk.reserve, s.disk.free = dir, o.DiskReserve, o.freeSpace
	if s.disk.reserve == 0 {
		s.disk.reserve = DefaultDiskReserve
	}
	if s.disk.free == nil {
		s.disk.free = statfsFree
	}
	s.trainer.log, s.trainer.done, s.trainer.peers = log, s.adoptTrained, s.peerDicts
	s.trainer.waitLeft = max(o.DictWait, 0)
	switch {
	case o.DictSamples == 0:
		s.trainer.want = DefaultDictSamples
	case o.DictSamples > 0:
		s.trainer.want = o.DictSamples
	default:
		s.trainer.off.Store(true)
	}
	if s.fs == nil {
		s.fs = osFS{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, d := range []string{dir, filepath.Join(dir, segmentsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("archive open: %w", err)
		}
	}
	refused, err := loadRefused(dir)
	if err != nil {
		return nil, fmt.Errorf("archive open: %w", err)
	}
	s.refused.m = refused
	if err := s.urlp.load(dir); err != nil {
		return nil, fmt.Errorf("archive open: %w", err)
	}
	return s, nil
}

func (s *Store) openIndex(path string) error {
	db, err := leveldb.OpenFile(path, indexOptions(opt.Options{}))
	if ldberrors.IsCorrupted(err) {
		s.log.Warn("index corrupted, recovering; if versions are missing, stop the node and run herod fsck --repair to rebuild it from the segments", "err", err)
		db, err = leveldb.RecoverFile(path, indexOptions(opt.Options{}))
	}
	if err != nil {
		return fmt.Errorf("archive open index: %w", err)
	}
	s.db = db
	s.compactChurn()
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
	if err := s.peers.load(db); err != nil {
		db.Close()
		return fmt.Errorf("archive open index: %w", err)
	}
	if err := moveStates(db, s.log); err != nil {
		db.Close()
		return fmt.Errorf("archive open index: %w", err)
	}
	if err := s.loadShares(); err != nil {
		db.Close()
		return fmt.Errorf("archive open index: signer shares: %w", err)
	}
	if err := s.openSegments(); err != nil {
		s.closeSegments()
		db.Close()
		return fmt.Errorf("archive open segments: %w", err)
	}
	if s.quota > 0 && s.ctr.bytes >= s.quota {
		s.quotaHit.Store(true)
		s.log.Warn("disk quota reached: no new versions will be stored", "bytes", s.ctr.bytes, "quota", s.quota)
	}
	s.startCommitter()
	return nil
}

// Close writes the index group forming, closes the segments and the index.
// Calls after Close fail; Close is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	// A dictionary being trained is dropped (adoptTrained sees closed):
	// the next Open trains again.
	s.ownMu.Lock()
	s.ownMu.Unlock()
	s.stopCommitter()
	err := s.closeSegments()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive close: %w", err)
	}
	return nil
}

// compactChurn, on Open, has goleveldb compact the keys every group
// rewrites — the directory sums ('h') and the totals ('m') — so that the
// index keeps one copy of each rather than one per group: a store of a
// few thousand versions never reaches a compaction by itself, and those
// copies were 40% of its index. It does so only while the index has no
// table below level 0 (it never compacted), so the work is that of the
// replayed journal and a few small tables; a larger index compacts by
// itself (compacting it anyway took 12 s at 1M versions). On Open rather
// than Close: a slower Close delayed a node's shutdown enough to change
// the timing of the ring's take-over tests. A failure costs only space;
// it is logged.
func (s *Store) compactChurn() {
	if s.failure() != nil {
		return
	}
	for level := 1; level < 7; level++ {
		n, err := s.db.GetProperty(fmt.Sprintf("leveldb.num-files-at-level%d", level))
		if err != nil || n != "0" {
			return
		}
	}
	start := time.Now()
	if err := s.db.CompactRange(util.Range{Start: []byte{pHash}, Limit: []byte{pMeta + 1}}); err != nil {
		s.log.Warn("index compaction of sums and totals failed", "err", err)
		return
	}
	s.log.Debug("compacted index sums and totals", "took", time.Since(start))
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
	c, commits := s.ctr, s.gc.commits
	s.mu.Unlock()
	failed := ""
	if err := s.failure(); err != nil {
		failed = err.Error()
	}
	return Stats{
		Versions:     c.versions,
		URLs:         c.urls,
		Bytes:        c.bytes,
		PayloadBytes: c.payload,
		Quota:        s.quota,
		QuotaReached: s.quotaHit.Load(),
		AtQuota:      s.AtQuota(),
		DiskFull:     s.disk.full.Load(),
		DiskRefused:  s.disk.refused.Load(),
		ShareRefused: s.shareRefused.Load(),
		RangeRefused: s.rangeRefused.Load(),
		Refused:      s.refusedN.Load(),
		Unchanged:    s.unchanged.Load(),
		TouchLookups: s.touchLookups.Load(),
		Corrupt:      s.corrupt.Load(),
		Segments:     s.segmentCount(),
		Commits:      commits,
		Failed:       failed,
		Dictionary:   s.trainer.how(),
	}
}

func (s *Store) segmentCount() int {
	s.segs.rmu.RLock()
	defer s.segs.rmu.RUnlock()
	return len(s.segs.open)
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
		v, err := s.decodeVersion(it.Key(), it.Value())
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
	v, err := s.decodeVersion(it.Key(), it.Value())
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

// hasVersion reports whether url has a version, without decoding one: a
// URL's host index entry is written with its first version and deleted
// with its last (commit.go, purge.go), so its existence is one point
// read, which the index's bloom filter answers for the tables that lack
// it (an iterator over the version prefix positions itself in a table of
// every level instead).
func (s *Store) hasVersion(url string) (bool, error) {
	return s.db.Has(hostKey(hostOf(url), url), nil)
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
	return s.decodeVersion(it.Key(), it.Value())
}

// Read reads the record of v (one pread of Size bytes at Offset in its
// segment) and verifies it: gzip and WARC framing, block and payload
// digests, and that it is the capture v describes. A mismatch returns an
// error wrapping ErrCorrupt; a missing segment ErrNotFound.
func (s *Store) Read(ctx context.Context, v Version) (*Capture, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive read: %w", err)
	}
	_, _, f, err := s.readVersion(v, nil)
	if err != nil {
		return nil, fmt.Errorf("archive read: %w", err)
	}
	return &f.capture, nil
}

// readVersion reads and verifies the record of v, returning its bytes,
// its segment's dictionary (nil: a gzip member) and its decoding; the
// uncompressed record of a .warc.zst segment is appended to zstRaw if not
// nil (a gzip member needs no other form).
func (s *Store) readVersion(v Version, zstRaw *bytes.Buffer) ([]byte, *zdict, *decodedFile, error) {
	ref, err := parseSegment(v.File)
	if err != nil {
		return nil, nil, nil, err
	}
	data, zd, err := s.readRecord(ref.id, v.Offset, v.Size)
	var f *decodedFile
	if err == nil {
		var raw *bytes.Buffer
		if zd != nil {
			raw = zstRaw
		}
		if f, err = decodeRecord(zd, data, raw); err == nil {
			err = checkEntry(v.Entry(), f, v.URL)
		}
	}
	if err != nil && s.rewrites.Load() > 0 {
		// A segment rewritten while open (compactOnline) moves records:
		// v may name the old place. Read it where the index has it now.
		if now, lerr := s.versionAt(v.Key, v.Time, v.Digest); errors.Is(lerr, ErrNotFound) {
			return nil, nil, nil, fmt.Errorf("%s: %w", v.URL, ErrNotFound)
		} else if lerr == nil && (now.File != v.File || now.Offset != v.Offset) {
			if zstRaw != nil {
				zstRaw.Reset()
			}
			return s.readVersion(now, zstRaw)
		}
	}
	if err != nil && errors.Is(err, ErrNotFound) {
		return nil, nil, nil, fmt.Errorf("%s %s+%d: %w", v.URL, v.File, v.Offset, err)
	}
	if err != nil {
		s.corrupt.Add(1)
		s.log.Error("corrupt record", "file", v.File, "offset", v.Offset, "url", v.URL, "err", err)
		return nil, nil, nil, fmt.Errorf("%s %s+%d: %w", v.URL, v.File, v.Offset, err)
	}
	return data, zd, f, nil
}

// readMember is readVersion that returns the record as a gzip member,
// compressing a .warc.zst segment's record again: what leaves the store
// (replication, export) is what every WARC reader reads.
func (s *Store) readMember(v Version) ([]byte, *decodedFile, error) {
	var raw bytes.Buffer
	data, zd, f, err := s.readVersion(v, &raw)
	if err != nil || zd == nil {
		return data, f, err
	}
	var buf bytes.Buffer
	buf.Grow(len(data) * 3 / 2)
	if err := s.gz.compress(&buf, raw.Bytes()); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), f, nil
}

// checkEntry verifies that a decoded record is the version e names.
func checkEntry(e Entry, f *decodedFile, url string) error {
	if id.OfString(f.capture.URL) != e.Key || (url != "" && f.capture.URL != url) {
		return fmt.Errorf("%w: record holds %q", ErrCorrupt, f.capture.URL)
	}
	if f.digest != e.Digest {
		return fmt.Errorf("%w: payload digest differs from the index", ErrCorrupt)
	}
	return nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
