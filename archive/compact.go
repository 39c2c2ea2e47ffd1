package archive

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Compaction. A purged version's record stays in its segment: the index
// no longer names it, so it is dead bytes. Compact rewrites a segment
// without its dead records under the same id, so that the order of the
// records across segments — which Reindex relies on to give equal
// versions of a day their Seq — does not change:
//
//  1. the live records are copied, byte for byte and in order, to
//     segments/<id>.warc.gz.compact, which is synced, then its directory;
//  2. one synced index write moves every live version to its new offset,
//     sets the segment's committed end to the new size and records the
//     compaction ('m' 'c' id);
//  3. the .compact file is renamed over the segment, the directory synced,
//     and the record of the compaction deleted (synced).
//
// A crash before 2 leaves a .compact file that no record names: Open
// removes it. A crash after 2 leaves the record: Open renames the
// .compact file over the segment if it is still there (the rename may
// not have happened, or not be durable), syncs the directory and deletes
// the record, all before it cuts segments to their committed ends — the
// old file is longer than the new end and must not be cut instead.

// compactExt is the suffix of a segment being rewritten.
const compactExt = ".compact"

// DefaultCompactMinDead is the share of a segment's bytes that must be
// dead for Compact to rewrite it when CompactOptions.MinDead is zero.
const DefaultCompactMinDead = 0.25

// CompactOptions tunes Compact.
type CompactOptions struct {
	// MinDead is the share (0-1] of a segment's bytes that must be dead
	// for the segment to be rewritten; zero means DefaultCompactMinDead.
	// A segment with no live record left is removed whatever MinDead is
	// (except the newest, whose id must not be used again).
	MinDead float64
	// Segments names segments ("segments/<id>.warc.gz", as
	// Report.Damaged lists them) to rewrite whatever their dead share:
	// damaged bytes are dead bytes, so this cuts out what Reindex
	// quarantined.
	Segments []string
}

// CompactReport is what Compact did.
type CompactReport struct {
	Segments  int   // segments examined
	Rewritten int   // segments rewritten without their dead records
	Removed   int   // segments removed: no live record left
	Before    int64 // bytes of the segments rewritten or removed, before
	After     int64 // their bytes after
}

// compactKey records an index write of step 2 whose rename (step 3) may
// not have happened.
func compactKey(n uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pMeta, 'c'}, n)
}

// Compact rewrites the segments of the stopped store in dir whose dead
// bytes (records of purged versions) are at least o.MinDead of their size,
// crash-safely (see above), and removes segments left with no live
// record. Nothing else may use the store meanwhile; a record's offset
// changes, so CDX lines exported before name stale offsets.
func Compact(ctx context.Context, dir string, so Options, o CompactOptions) (CompactReport, error) {
	if o.MinDead == 0 {
		o.MinDead = DefaultCompactMinDead
	}
	if o.MinDead < 0 || o.MinDead > 1 {
		return CompactReport{}, fmt.Errorf("archive compact: dead share %v not in (0, 1]", o.MinDead)
	}
	s, err := Open(dir, so)
	if err != nil {
		return CompactReport{}, fmt.Errorf("archive compact: %w", err)
	}
	rep, err := s.compact(ctx, o.MinDead, o.Segments)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, fmt.Errorf("archive compact: %w", err)
	}
	s.log.Info("compacted", "segments", rep.Segments, "rewritten", rep.Rewritten, "removed", rep.Removed,
		"before", rep.Before, "after", rep.After)
	return rep, nil
}

// liveRecord is an index entry of a version whose record is in a segment.
type liveRecord struct {
	key       []byte
	sv        storedVersion
	off, size int64
}

// liveRecords returns the index entries of the versions whose records
// are in segments, by segment.
func (s *Store) liveRecords() (map[uint32][]liveRecord, error) {
	live := map[uint32][]liveRecord{}
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion}), nil)
	defer it.Release()
	for it.Next() {
		sv, err := decodeStored(it.Key(), it.Value())
		if err != nil {
			return nil, err
		}
		if sv.format != formatSegment {
			continue
		}
		live[sv.seg] = append(live[sv.seg], liveRecord{key: slices.Clone(it.Key()), sv: sv, off: sv.Offset, size: sv.Size})
	}
	return live, it.Error()
}

// compact is Compact on an open store that nothing else uses.
func (s *Store) compact(ctx context.Context, minDead float64, force []string) (CompactReport, error) {
	var rep CompactReport
	live, err := s.liveRecords()
	if err != nil {
		return rep, err
	}
	ids := make([]uint32, 0, len(s.segs.open))
	for n := range s.segs.open {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	for _, n := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		g := s.segs.open[n]
		rep.Segments++
		dead, liveBytes := g.dead(live[n])
		forced := slices.Contains(force, g.rel())
		records := dead + liveBytes
		if dead <= 0 || (!forced && liveBytes > 0 && float64(dead) < minDead*float64(records)) {
			continue
		}
		if liveBytes == 0 && n == s.segs.last {
			// Its end key is what keeps its id from being used again
			// (lastSegmentID); an empty newest segment costs nothing.
			continue
		}
		rep.Before += g.size
		if err := s.rewriteSegment(g, live[n], false); err != nil {
			return rep, fmt.Errorf("segment %s: %w", g.name(), err)
		}
		if len(live[n]) == 0 {
			rep.Removed++
			continue
		}
		rep.Rewritten++
		rep.After += g.size
	}
	return rep, nil
}

// dead returns the bytes of g's records that live does not name, and
// those it does; a .warc.zst's dictionary frame is neither.
func (g *segment) dead(live []liveRecord) (dead, liveBytes int64) {
	for _, r := range live {
		liveBytes += r.size
	}
	return g.size - g.head - liveBytes, liveBytes
}

// compactOnline is compaction on the open store (PurgeURLs): it rewrites
// the segments of only (nil: every segment) that have dead bytes, however
// few, without them, by the same steps as Compact. The caller holds
// every key lock, so no record is being appended or committed; appends
// wait for segs.mu meanwhile. A segment left with no live record is
// removed, unless records are appended to it or it is the newest: those
// are rewritten empty. Reads go on: a reader holds segs.rmu while it
// reads, so no read uses a handle being closed, and one that read an
// offset the rewrite moved looks the version up again (readVersion).
func (s *Store) compactOnline(ctx context.Context, only map[uint32]bool) (CompactReport, error) {
	var rep CompactReport
	live, err := s.liveRecords()
	if err != nil {
		return rep, err
	}
	ss := &s.segs
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := s.failure(); err != nil {
		return rep, err
	}
	current := map[*segment]bool{}
	for _, g := range ss.cur {
		current[g] = true
	}
	ss.rmu.RLock()
	ids := make([]uint32, 0, len(ss.open))
	for n := range ss.open {
		if only == nil || only[n] {
			ids = append(ids, n)
		}
	}
	ss.rmu.RUnlock()
	slices.Sort(ids)
	for _, n := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		ss.rmu.RLock()
		g := ss.open[n]
		ss.rmu.RUnlock()
		rep.Segments++
		dead, _ := g.dead(live[n])
		if dead <= 0 {
			continue
		}
		keep := current[g] || n == ss.last
		rep.Before += g.size
		s.rewrites.Add(1) // before any offset moves
		if err := s.rewriteSegment(g, live[n], keep); err != nil {
			return rep, s.fail(fmt.Errorf("compact segment %s: %w", g.name(), err))
		}
		if len(live[n]) == 0 && !keep {
			rep.Removed++
			continue
		}
		rep.Rewritten++
		rep.After += g.size
	}
	return rep, nil
}

// rewriteSegment replaces segment g by its live records (steps 1-3), or
// removes it if there are none and keep is false.
func (s *Store) rewriteSegment(g *segment, live []liveRecord, keep bool) error {
	segDir := filepath.Join(s.dir, segmentsDir)
	name := filepath.Join(segDir, g.name())
	sync := &opt.WriteOptions{Sync: true}
	if len(live) == 0 && !keep {
		// Forgetting its end first: a crash before the removal leaves a
		// segment Open removes as one the index records nothing of.
		if err := s.db.Delete(segEndKey(g.id), sync); err != nil {
			return err
		}
		s.segs.rmu.Lock()
		delete(s.segs.open, g.id)
		s.segs.rmu.Unlock()
		s.streams.retire(g.f)
		if err := s.fs.Remove(name); err != nil {
			return err
		}
		return s.fs.SyncDir(segDir)
	}
	slices.SortFunc(live, func(a, b liveRecord) int { return int(a.off - b.off) })
	tmp := name + compactExt
	f, err := s.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	var b leveldb.Batch
	var end, head int64
	if frame := g.dictFrame(); frame != nil {
		if _, err := f.WriteAt(frame, 0); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Base(tmp), err)
		}
		end, head = int64(len(frame)), int64(len(frame))
	}
	for _, r := range live {
		data, _, err := s.readRecord(g.id, r.off, r.size)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(data, end); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Base(tmp), err)
		}
		v := r.sv.Version
		v.Offset = end
		b.Put(r.key, encodeVersion(v, g.id, r.sv.peer))
		end += r.size
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(tmp), err)
	}
	if err := s.fs.SyncDir(segDir); err != nil {
		return err
	}
	b.Put(segEndKey(g.id), binary.AppendUvarint(nil, uint64(end)))
	b.Put(compactKey(g.id), nil)
	// Reads wait from the index write to the handle's swap: one that
	// finds a new offset reads the new file (one that found an old
	// offset and reads the new file looks the version up again).
	s.segs.rmu.Lock()
	if err := s.db.Write(&b, sync); err != nil {
		s.segs.rmu.Unlock()
		return fmt.Errorf("index write: %w", err)
	}
	ok = true
	old := g.f
	g.f, g.size, g.durable, g.head = f, end, end, head
	s.segs.rmu.Unlock()
	s.streams.retire(old)
	return s.finishCompaction(g.id, g.name())
}

// finishCompaction does step 3 for segment n, of file name base, whose
// step 2 is done: the rename of its .compact file, if still there, over
// the segment, the directory's sync and the deletion of the compaction's
// record.
func (s *Store) finishCompaction(n uint32, base string) error {
	segDir := filepath.Join(s.dir, segmentsDir)
	name := filepath.Join(segDir, base)
	err := s.fs.Rename(name+compactExt, name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := s.fs.SyncDir(segDir); err != nil {
		return err
	}
	return s.db.Delete(compactKey(n), &opt.WriteOptions{Sync: true})
}

// recoverCompactions finishes the compactions whose index write is done
// and removes the .compact files of those that did not reach it. Open
// runs it before it cuts segments to their committed ends.
func (s *Store) recoverCompactions() error {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pMeta, 'c'}), nil)
	var done []uint32
	for it.Next() {
		if k := it.Key(); len(k) == 6 {
			done = append(done, binary.BigEndian.Uint32(k[2:]))
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return err
	}
	segDir := filepath.Join(s.dir, segmentsDir)
	for _, n := range done {
		base := SegmentName(n)
		for _, p := range []string{segmentName(n, true), segmentName(n, true) + compactExt} {
			if _, err := os.Stat(filepath.Join(segDir, p)); err == nil {
				base = segmentName(n, true)
			}
		}
		s.log.Warn("finishing a compaction a crash interrupted", "segment", base)
		if err := s.finishCompaction(n, base); err != nil {
			return fmt.Errorf("finish compaction of %s: %w", base, err)
		}
	}
	ents, err := os.ReadDir(segDir)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), compactExt) {
			s.log.Warn("removing an unfinished compaction's file", "file", e.Name())
			if err := s.fs.Remove(filepath.Join(segDir, e.Name())); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		return s.fs.SyncDir(segDir)
	}
	return nil
}

// streamRefs counts the streamed reads (Body, stream.go) of each segment
// handle, so that a handle a rewrite while open replaced is closed when
// its last stream ends rather than under it.
type streamRefs struct {
	mu      sync.Mutex
	n       map[segFile]int
	retired map[segFile]bool
}

// acquire counts a stream of f.
func (r *streamRefs) acquire(f segFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n, r.retired = map[segFile]int{}, map[segFile]bool{}
	}
	r.n[f]++
}

// release ends a stream of f, closing f if it was retired and this was
// its last stream.
func (r *streamRefs) release(f segFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n[f]--; r.n[f] > 0 {
		return
	}
	delete(r.n, f)
	if r.retired[f] {
		delete(r.retired, f)
		f.Close()
	}
}

// retire closes f, a handle no longer in the segment set, now or, if
// streams still read it, when the last one ends.
func (r *streamRefs) retire(f segFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n[f] > 0 {
		r.retired[f] = true
		return
	}
	f.Close()
}
