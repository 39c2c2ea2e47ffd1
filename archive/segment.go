package archive

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/herod-archive/herod/internal/id"
)

// Segments. Versions are appended, one gzip member each, to the active
// segment file segments/<id>.warc.gz, or, once the store has trained its
// dictionary, one zstd frame each to segments/<id>.warc.zst (zstd.go) (ids
// count from 1, zero-padded to 8 digits so that names sort as ids). A
// segment is rolled — the next Put opens the next id — once it would
// exceed Options.SegmentSize or when the day (of the store's clock and day
// length) changes, so that a day's crawl is a few whole files. Segments
// are never rewritten in place; the only change to one is the cut of a
// tail that no committed index entry covers (Open, Reindex).
//
// Durability: a record is written (pwrite) before its index entry is
// queued; the committer fsyncs every segment a group wrote to, then writes
// the group's index batch, synced, with the new durable end of each such
// segment ('e' meta keys). A new segment file is made durable in its
// directory (fsync of segments/) before any record in it is acknowledged.
// On Open each segment is cut to its recorded end: bytes past it were
// never acknowledged (a torn record, or a whole one whose group did not
// commit). A failed write or sync makes the store refuse writes
// (ErrFailed) until it is reopened, as etcd does: after a failed fsync
// the kernel may have dropped the dirty pages, so nothing written since
// the last good sync can be trusted, and a later sync "succeeding" would
// hide it.

// segmentsDir is the directory, relative to the store root, holding the
// segment files.
const segmentsDir = "segments"

// DefaultSegmentSize is Options.SegmentSize when zero.
const DefaultSegmentSize = 1 << 30

// ErrFailed reports a store that refuses writes because a write or sync
// of its segments or index failed; Close and Open it again (Open cuts what
// was not committed).
var ErrFailed = errors.New("archive: store failed a write or sync; reopen it")

// segment is one segment file.
type segment struct {
	segRef // id, and whether it is a .warc.zst (name, rel)
	f      segFile
	zd     *zdict // a .warc.zst's dictionary (nil: damaged frame, records unreadable)
	day    int64  // the day it was opened for appends (0 for old segments)
	// head is the length of a .warc.zst's dictionary frame, where its
	// first record starts (0: gzip, or a damaged frame); it changes with
	// the file, as size does.
	head int64
	// size is the offset of the next record, guarded by segs.mu.
	size int64
	// durable is the end recorded in the index, owned by the committer
	// once the store is open.
	durable int64
}

// segSet is the store's segments.
type segSet struct {
	mu sync.Mutex // guards cur, last and appends to cur
	// cur holds the segment appended to for each form of record: gzip
	// members (the zero key), and zstd frames of each dictionary (by its
	// hash): the store's own, and those of the peers whose records it
	// keeps as they were sent (replica.go).
	cur  map[id.ID]*segment
	last uint32 // the highest id in use

	rmu  sync.RWMutex
	open map[uint32]*segment // every segment with an open handle
	max  int64               // Options.SegmentSize
}

// SegmentName returns the file name of segment id in gzip records
// (FileExt); a segment of zstd records with a dictionary ends in .warc.zst
// instead (zstd.go).
func SegmentName(id uint32) string { return segmentName(id, false) }

func segmentName(id uint32, zst bool) string {
	if zst {
		return fmt.Sprintf("%08d%s", id, zstExt)
	}
	return fmt.Sprintf("%08d%s", id, FileExt)
}

// segRef names a segment file: its id and whether it is a .warc.zst.
type segRef struct {
	id  uint32
	zst bool
}

// name returns the segment's file name.
func (r segRef) name() string { return segmentName(r.id, r.zst) }

// rel returns the segment's path relative to the store root, as
// Version.File holds it.
func (r segRef) rel() string { return path.Join(segmentsDir, r.name()) }

// segmentRel returns the path of gzip segment id relative to the store
// root.
func segmentRel(id uint32) string { return segRef{id: id}.rel() }

// segmentRel returns the path of segment n relative to the store root:
// that of the open segment, else of a gzip one.
func (s *Store) segmentRel(n uint32) string {
	s.segs.rmu.RLock()
	g := s.segs.open[n]
	s.segs.rmu.RUnlock()
	if g != nil {
		return g.rel()
	}
	return segmentRel(n)
}

// parseSegment parses a segment file's path relative to the store root
// (or its base name).
func parseSegment(rel string) (segRef, error) {
	dir, name := path.Split(rel)
	if dir != "" && dir != segmentsDir+"/" {
		return segRef{}, fmt.Errorf("archive: %q is not a segment", rel)
	}
	var r segRef
	digits, ok := strings.CutSuffix(name, FileExt)
	if !ok {
		digits, ok = strings.CutSuffix(name, zstExt)
		r.zst = true
	}
	n, err := strconv.ParseUint(digits, 10, 32)
	r.id = uint32(n)
	if !ok || err != nil || n == 0 || r.name() != name {
		return segRef{}, fmt.Errorf("archive: %q is not a segment", rel)
	}
	return r, nil
}

// segEndKey is the index key of a segment's durable end.
func segEndKey(id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pMeta, 'e'}, id)
}

// listSegments returns dir's segment files, by ascending id. Two files
// of one id (.warc.gz and .warc.zst) are an error.
func listSegments(dir string) ([]segRef, error) {
	ents, err := os.ReadDir(filepath.Join(dir, segmentsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var refs []segRef
	for _, e := range ents {
		if r, err := parseSegment(e.Name()); err == nil && e.Type().IsRegular() {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(a, b segRef) int { return cmp.Compare(a.id, b.id) })
	for i := 1; i < len(refs); i++ {
		if refs[i].id == refs[i-1].id {
			return nil, fmt.Errorf("%w: both %s and %s exist", ErrCorrupt, refs[i-1].name(), refs[i].name())
		}
	}
	return refs, nil
}

// openSegments opens the segments of an open index and cuts each to the
// end the index records, removing segments it records nothing of: what
// lies past the end was never acknowledged. It loads the dictionary of
// each .warc.zst segment, then the store's own (loadOwnDict).
func (s *Store) openSegments() error {
	if err := s.recoverCompactions(); err != nil {
		return err
	}
	refs, err := listSegments(s.dir)
	if err != nil {
		return err
	}
	s.segs.open = make(map[uint32]*segment)
	s.segs.cur = make(map[id.ID]*segment)
	segDir := filepath.Join(s.dir, segmentsDir)
	removed := false
	var newest *zdict
	for _, r := range refs {
		n := r.id
		end, err := s.segmentEnd(n)
		if err != nil {
			return err
		}
		name := filepath.Join(segDir, r.name())
		f, err := s.fs.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		if fi.Size() > end {
			s.log.Warn("cutting a segment's uncommitted tail", "segment", r.name(),
				"size", fi.Size(), "committed", end)
			if err := f.Truncate(end); err != nil {
				f.Close()
				return fmt.Errorf("cut segment %s: %w", r.name(), err)
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return fmt.Errorf("cut segment %s: %w", r.name(), err)
			}
		} else if fi.Size() < end {
			s.log.Error("segment shorter than its committed end: run fsck", "segment", r.name(),
				"size", fi.Size(), "committed", end)
		}
		if end == 0 {
			f.Close()
			if err := s.fs.Remove(name); err != nil {
				return err
			}
			removed = true
			continue
		}
		g := &segment{segRef: r, f: f, size: end, durable: end}
		if r.zst {
			if g.zd, g.head, err = s.segmentDict(f, min(end, fi.Size())); err != nil {
				// Its records fail their reads; fsck --repair quarantines it.
				s.log.Error("segment's dictionary unreadable: run fsck", "segment", r.name(), "err", err)
			} else {
				newest = g.zd
			}
		}
		s.segs.open[n] = g
		s.segs.last = max(s.segs.last, n)
	}
	if removed {
		if err := s.fs.SyncDir(segDir); err != nil {
			return err
		}
	}
	// Ids are never reused, even those of removed segments: a replica or
	// an export may still name them.
	s.segs.last = max(s.segs.last, s.lastSegmentID())
	return s.loadOwnDict(newest)
}

// segmentDict reads the dictionary frame at the start of a .warc.zst
// segment of size bytes and returns the store's zdict for it, loading it
// if new, and the frame's length.
func (s *Store) segmentDict(r io.ReaderAt, size int64) (*zdict, int64, error) {
	raw, frame, err := readDictFrame(r, size)
	if err != nil {
		return nil, 0, err
	}
	zd, err := s.keepDict(raw, frame)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return zd, int64(len(frame)), nil
}

// segmentEnd returns the durable end of segment n recorded in the index
// (0 if none).
func (s *Store) segmentEnd(n uint32) (int64, error) {
	val, err := s.db.Get(segEndKey(n), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	end, k := binary.Uvarint(val)
	if k <= 0 {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	return int64(end), nil
}

// lastSegmentID returns the highest segment id the index records an end
// for.
func (s *Store) lastSegmentID() uint32 {
	it := s.db.NewIterator(nil, nil)
	defer it.Release()
	ok := it.Last()
	if it.Seek([]byte{pMeta, 'f'}) {
		ok = it.Prev()
	}
	if ok {
		if k := it.Key(); len(k) == 6 && k[0] == pMeta && k[1] == 'e' {
			return binary.BigEndian.Uint32(k[2:])
		}
	}
	return 0
}

// closeSegments closes every segment handle.
func (s *Store) closeSegments() error {
	s.segs.mu.Lock() // no append is under way, and none starts (closed)
	defer s.segs.mu.Unlock()
	s.segs.rmu.Lock()
	defer s.segs.rmu.Unlock()
	var first error
	for n, g := range s.segs.open {
		if err := g.f.Close(); err != nil && first == nil {
			first = err
		}
		delete(s.segs.open, n)
	}
	return first
}

// appendRecord writes one record at the end of the active segment of its
// form (a gzip member, or a zstd frame of rec.zd), rolling to a new
// segment first when the record would not fit or the day changed, and
// returns where it went. The record is not durable until its index group
// commits. A write error fails the store.
func (s *Store) appendRecord(rec *record) (*segment, int64, error) {
	if err := s.failure(); err != nil {
		return nil, 0, err
	}
	ss := &s.segs
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s.closed.Load() {
		return nil, 0, errStoreClosed
	}
	day := s.DayOf(s.now())
	var key id.ID // gzip members
	if rec.zd != nil {
		key = rec.zd.hash
	}
	data := rec.data
	if g := ss.cur[key]; g == nil || g.day != day || (g.size > g.head && g.size+int64(len(data)) > ss.max) {
		if err := s.rollLocked(day, rec.zd); err != nil {
			return nil, 0, err
		}
	}
	g := ss.cur[key]
	off := g.size
	if _, err := g.f.WriteAt(data, off); err != nil {
		// The bytes may be partly there: nothing may follow them.
		return nil, 0, s.fail(fmt.Errorf("write segment %s: %w", g.name(), err))
	}
	g.size += int64(len(data))
	return g, off, nil
}

// dictFrame returns the dictionary frame a segment starts with (none for
// gzip segments).
func (g *segment) dictFrame() []byte {
	if g.zd == nil {
		return nil
	}
	return g.zd.frame()
}

// rollLocked creates the next segment, for records of dictionary zd (nil:
// gzip), durable in its directory, and makes it the active one of its
// form. A
// .warc.zst segment starts with zd's frame, which becomes durable with the
// segment's first record. The caller holds segs.mu.
func (s *Store) rollLocked(day int64, zd *zdict) error {
	ss := &s.segs
	g := &segment{segRef: segRef{id: ss.last + 1, zst: zd != nil}, day: day, zd: zd}
	segDir := filepath.Join(s.dir, segmentsDir)
	f, err := s.fs.OpenFile(filepath.Join(segDir, g.name()), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	if !s.noSync {
		if err := s.fs.SyncDir(segDir); err != nil {
			f.Close()
			return s.fail(fmt.Errorf("create segment %s: %w", g.name(), err))
		}
	}
	g.f = f
	if frame := g.dictFrame(); frame != nil {
		if _, err := f.WriteAt(frame, 0); err != nil {
			f.Close()
			return s.fail(fmt.Errorf("write segment %s: %w", g.name(), err))
		}
		g.size, g.head = int64(len(frame)), int64(len(frame))
	}
	ss.last = g.id
	var key id.ID
	if zd != nil {
		key = zd.hash
		s.holdDict(zd)
	}
	ss.cur[key] = g
	ss.rmu.Lock()
	ss.open[g.id] = g
	ss.rmu.Unlock()
	return nil
}

// readRecord reads size bytes at off in segment n (one pread) and
// returns them with the segment's dictionary (nil for gzip records).
func (s *Store) readRecord(n uint32, off, size int64) ([]byte, *zdict, error) {
	// Held through the read: a segment rewritten while open
	// (compactOnline) closes its old handle under the write lock.
	s.segs.rmu.RLock()
	defer s.segs.rmu.RUnlock()
	g := s.segs.open[n]
	var f segFile
	var zd *zdict
	if g != nil {
		f, zd = g.f, g.zd
	}
	if g == nil {
		return nil, nil, fmt.Errorf("segment %s: %w", segmentRel(n), ErrNotFound)
	}
	if g.zst && zd == nil {
		return nil, nil, fmt.Errorf("segment %s: %w: dictionary frame unreadable", g.name(), ErrCorrupt)
	}
	if size <= 0 || size > 2*maxBlock || off < 0 {
		return nil, nil, fmt.Errorf("%w: bad record extent %d+%d", ErrCorrupt, off, size)
	}
	buf := make([]byte, size)
	k, err := f.ReadAt(buf, off)
	if k == len(buf) {
		return buf, zd, nil
	}
	return nil, nil, fmt.Errorf("read segment %s at %d: %w (%d of %d bytes: %w)", g.name(), off, err, k, size, ErrCorrupt)
}

// decodeRecord verifies data, a record of a segment of dictionary zd
// (nil: gzip), appending its uncompressed bytes to raw if not nil.
func decodeRecord(zd *zdict, data []byte, raw *bytes.Buffer) (*decodedFile, error) {
	if zd == nil {
		return decodeMemberTo(data, raw)
	}
	return decodeFrame(zd, data, raw)
}

// fail makes the store refuse writes from now on and returns err wrapped
// with ErrFailed. The first failure is kept and logged.
func (s *Store) fail(err error) error {
	ferr := fmt.Errorf("%w: %w", ErrFailed, err)
	if s.failed.CompareAndSwap(nil, &ferr) {
		s.log.Error("store failed: refusing writes until reopened", "err", err)
	}
	return *s.failed.Load()
}

// failure returns the store's failure, nil if it has none.
func (s *Store) failure() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}
