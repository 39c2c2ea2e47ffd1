package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
)

// Segments. Versions are appended, one gzip member each, to the active
// segment file segments/<id>.warc.gz (ids count from 1, zero-padded to 8
// digits so that names sort as ids). A segment is rolled — the next Put
// opens the next id — once it would exceed Options.SegmentSize or when the
// day (of the store's clock and day length) changes, so that a day's
// crawl is a few whole files. Segments are never rewritten in place; the
// only change to one is the cut of a tail that no committed index entry
// covers (Open, Reindex).
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
	id  uint32
	f   segFile
	day int64 // the day it was opened for appends (0 for old segments)
	// size is the offset of the next record, guarded by segs.mu.
	size int64
	// durable is the end recorded in the index, owned by the committer
	// once the store is open.
	durable int64
}

// segSet is the store's segments.
type segSet struct {
	mu   sync.Mutex // guards cur, last and appends to cur
	cur  *segment   // the segment appended to; nil until the first append
	last uint32     // the highest id in use

	rmu  sync.RWMutex
	open map[uint32]*segment // every segment with an open handle
	max  int64               // Options.SegmentSize
}

// SegmentName returns the file name of segment id.
func SegmentName(id uint32) string { return fmt.Sprintf("%08d%s", id, FileExt) }

// segmentRel returns the path of segment id relative to the store root;
// it is what Version.File holds.
func segmentRel(id uint32) string { return path.Join(segmentsDir, SegmentName(id)) }

// parseSegment parses a segment file's path relative to the store root
// (or its base name).
func parseSegment(rel string) (uint32, error) {
	dir, name := path.Split(rel)
	if dir != "" && dir != segmentsDir+"/" {
		return 0, fmt.Errorf("archive: %q is not a segment", rel)
	}
	digits, ok := strings.CutSuffix(name, FileExt)
	n, err := strconv.ParseUint(digits, 10, 32)
	if !ok || err != nil || n == 0 || SegmentName(uint32(n)) != name {
		return 0, fmt.Errorf("archive: %q is not a segment", rel)
	}
	return uint32(n), nil
}

// segEndKey is the index key of a segment's durable end.
func segEndKey(id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pMeta, 'e'}, id)
}

// listSegments returns the ids of dir's segment files, ascending.
func listSegments(dir string) ([]uint32, error) {
	ents, err := os.ReadDir(filepath.Join(dir, segmentsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []uint32
	for _, e := range ents {
		if n, err := parseSegment(e.Name()); err == nil && e.Type().IsRegular() {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// openSegments opens the segments of an open index and cuts each to the
// end the index records, removing segments it records nothing of: what
// lies past the end was never acknowledged.
func (s *Store) openSegments() error {
	if err := s.recoverCompactions(); err != nil {
		return err
	}
	ids, err := listSegments(s.dir)
	if err != nil {
		return err
	}
	s.segs.open = make(map[uint32]*segment)
	segDir := filepath.Join(s.dir, segmentsDir)
	removed := false
	for _, n := range ids {
		end, err := s.segmentEnd(n)
		if err != nil {
			return err
		}
		name := filepath.Join(segDir, SegmentName(n))
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
			s.log.Warn("cutting a segment's uncommitted tail", "segment", SegmentName(n),
				"size", fi.Size(), "committed", end)
			if err := f.Truncate(end); err != nil {
				f.Close()
				return fmt.Errorf("cut segment %s: %w", SegmentName(n), err)
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return fmt.Errorf("cut segment %s: %w", SegmentName(n), err)
			}
		} else if fi.Size() < end {
			s.log.Error("segment shorter than its committed end: run fsck", "segment", SegmentName(n),
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
		s.segs.open[n] = &segment{id: n, f: f, size: end, durable: end}
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
	return nil
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

// appendRecord writes one record at the end of the active segment,
// rolling to a new segment first when the record would not fit or the
// day changed, and returns where it went. The record is not durable until
// its index group commits. A write error fails the store.
func (s *Store) appendRecord(data []byte) (*segment, int64, error) {
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
	if g := ss.cur; g == nil || g.day != day || (g.size > 0 && g.size+int64(len(data)) > ss.max) {
		if err := s.rollLocked(day); err != nil {
			return nil, 0, err
		}
	}
	g := ss.cur
	off := g.size
	if _, err := g.f.WriteAt(data, off); err != nil {
		// The bytes may be partly there: nothing may follow them.
		return nil, 0, s.fail(fmt.Errorf("write segment %s: %w", SegmentName(g.id), err))
	}
	g.size += int64(len(data))
	return g, off, nil
}

// rollLocked creates the next segment, durable in its directory, and makes
// it the active one. The caller holds segs.mu.
func (s *Store) rollLocked(day int64) error {
	ss := &s.segs
	n := ss.last + 1
	segDir := filepath.Join(s.dir, segmentsDir)
	f, err := s.fs.OpenFile(filepath.Join(segDir, SegmentName(n)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	if !s.noSync {
		if err := s.fs.SyncDir(segDir); err != nil {
			f.Close()
			return s.fail(fmt.Errorf("create segment %s: %w", SegmentName(n), err))
		}
	}
	g := &segment{id: n, f: f, day: day}
	ss.last = n
	ss.cur = g
	ss.rmu.Lock()
	ss.open[n] = g
	ss.rmu.Unlock()
	return nil
}

// readRecord reads size bytes at off in segment n: one pread.
func (s *Store) readRecord(n uint32, off, size int64) ([]byte, error) {
	s.segs.rmu.RLock()
	g := s.segs.open[n]
	s.segs.rmu.RUnlock()
	if g == nil {
		return nil, fmt.Errorf("segment %s: %w", SegmentName(n), ErrNotFound)
	}
	if size <= 0 || size > 2*maxBlock || off < 0 {
		return nil, fmt.Errorf("%w: bad record extent %d+%d", ErrCorrupt, off, size)
	}
	buf := make([]byte, size)
	k, err := g.f.ReadAt(buf, off)
	if k == len(buf) {
		return buf, nil
	}
	return nil, fmt.Errorf("read segment %s at %d: %w (%d of %d bytes: %w)", SegmentName(n), off, err, k, size, ErrCorrupt)
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
