package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
	ldberrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Report is what Reindex and Fsck found.
type Report struct {
	Files    int   `json:"files"`    // segment files examined
	Versions int   `json:"versions"` // valid records indexed
	Bytes    int64 `json:"bytes"`    // bytes of those records
	// Corrupt lists where damaged bytes start
	// ("segments/<id>.warc.gz+<offset>"): before a later valid record
	// (left in place, skipped) or a tail with none (a torn write), which
	// Reindex copies to quarantine/<segment>.<offset> and cuts; Fsck
	// changes nothing.
	Corrupt []string `json:"corrupt,omitempty"`
	// Skipped counts valid records not indexed: duplicates of a version
	// already seen and versions of refused (purged) peers.
	Skipped int `json:"skipped"`
	// Unindexed lists records the live index does not know (Fsck).
	Unindexed []string `json:"unindexed,omitempty"`
	// Missing lists versions the live index names but that no valid
	// record holds (Fsck).
	Missing []string `json:"missing,omitempty"`
	// Mismatched counts other index entries (directory hashes, counters,
	// host entries, segment ends) that differ between the live and the
	// rebuilt index (Fsck).
	Mismatched int `json:"mismatched"`
	// Damaged lists the segments with damaged bytes before a valid record
	// (Corrupt names where): Reindex copies those bytes to
	// quarantine/<segment>.<offset> and leaves them in place, for Compact
	// (CompactOptions.Segments) to cut them out.
	Damaged []string `json:"damaged,omitempty"`
}

// OK reports whether Fsck found the store consistent.
func (r Report) OK() bool {
	return len(r.Corrupt) == 0 && len(r.Unindexed) == 0 && len(r.Missing) == 0 && r.Mismatched == 0
}

// Reindex rebuilds the index of the store in dir from its segments alone,
// cutting each segment after its last valid record (the cut tail is kept
// in dir/quarantine/). Crawl states and unchanged checks, which no record
// holds, are copied from the old index when it can still be read;
// without one, each URL's crawl state is derived from its newest version
// (ETag, Last-Modified, digest, time; no outlinks) and the checks are
// lost. Versions of refused peers (PurgePeer) and captures a URL purge
// covers (PurgeURLs) are left out. The new index
// replaces the old one by a swap that a crash at any step leaves
// recoverable (swap.go). The store must not be open.
func Reindex(ctx context.Context, dir string, o Options) (Report, error) {
	s, err := newStore(dir, o)
	if err != nil {
		return Report{}, fmt.Errorf("archive reindex: %w", err)
	}
	if err := recoverSwap(dir); err != nil {
		return Report{}, fmt.Errorf("archive reindex: %w", err)
	}
	old, err := openOld(filepath.Join(dir, "index"))
	if err != nil {
		return Report{}, fmt.Errorf("archive reindex: %w", err)
	}
	if old != nil {
		defer old.Close()
	}
	dst := filepath.Join(dir, indexNew)
	rep, err := s.build(ctx, dst, old, true)
	if err != nil {
		os.RemoveAll(dst)
		return rep, fmt.Errorf("archive reindex: %w", err)
	}
	if old != nil {
		old.Close()
	}
	if err := swapIndex(dir); err != nil {
		return rep, fmt.Errorf("archive reindex: %w", err)
	}
	s.log.Info("reindexed", "versions", rep.Versions, "bytes", rep.Bytes, "corrupt", len(rep.Corrupt))
	return rep, nil
}

// Fsck verifies every record of the store in dir and compares the index
// the segments imply with the live index, changing nothing. The store
// must not be open.
func Fsck(ctx context.Context, dir string, o Options) (Report, error) {
	s, err := newStore(dir, o)
	if err != nil {
		return Report{}, fmt.Errorf("archive fsck: %w", err)
	}
	old, err := openOld(filepath.Join(dir, "index"))
	if err != nil {
		return Report{}, fmt.Errorf("archive fsck: %w", err)
	}
	if old != nil {
		defer old.Close()
	}
	tmp, err := os.MkdirTemp(dir, "fsck-")
	if err != nil {
		return Report{}, fmt.Errorf("archive fsck: %w", err)
	}
	defer os.RemoveAll(tmp)
	rep, err := s.build(ctx, filepath.Join(tmp, "index"), nil, false)
	if err != nil {
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	rebuilt, err := leveldb.OpenFile(filepath.Join(tmp, "index"), indexOptions(opt.Options{ErrorIfMissing: true}))
	if err != nil {
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	defer rebuilt.Close()
	live := old
	if live == nil {
		empty, err := leveldb.OpenFile(filepath.Join(tmp, "empty"), &opt.Options{DisableSeeksCompaction: true})
		if err != nil {
			return rep, fmt.Errorf("archive fsck: %w", err)
		}
		defer empty.Close()
		live = empty
	}
	refs, err := listSegments(dir)
	if err != nil {
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	files := make(map[uint32]string, len(refs))
	for _, r := range refs {
		files[r.id] = r.rel()
	}
	if err := compareIndexes(live, rebuilt, files, &rep); err != nil {
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	return rep, nil
}

// openOld opens an existing index for reading; it returns nil, nil if
// there is none or it cannot be recovered.
func openOld(path string) (*leveldb.DB, error) {
	db, err := leveldb.OpenFile(path, indexOptions(opt.Options{ErrorIfMissing: true}))
	if ldberrors.IsCorrupted(err) {
		db, err = leveldb.RecoverFile(path, indexOptions(opt.Options{}))
	}
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, os.ErrNotExist), ldberrors.IsCorrupted(err):
		return nil, nil
	default:
		return nil, err // notably: locked by an open Store
	}
}

// rebuildState accumulates what the segments imply while build scans them.
type rebuildState struct {
	db     *leveldb.DB
	batch  leveldb.Batch
	leaf   map[[2]byte]DirSum
	level  [256]DirSum
	root   DirSum
	ctr    counters
	peers  peerTable
	seen   map[string]bool       // version keys indexed
	seqs   map[string]int        // next Seq per (key, digest, day)
	newest map[id.ID]stateRecord // derived crawl states
	derive bool
}

// build scans the segments and writes the implied index to a new
// goleveldb at dst, synced, copying crawl states and checks from old if
// non-nil. With cut set, each segment is cut after its last valid record.
func (s *Store) build(ctx context.Context, dst string, old *leveldb.DB, cut bool) (Report, error) {
	var rep Report
	if err := os.RemoveAll(dst); err != nil {
		return rep, err
	}
	db, err := leveldb.OpenFile(dst, indexOptions(opt.Options{}))
	if err != nil {
		return rep, err
	}
	defer db.Close()
	st := &rebuildState{
		db: db, leaf: make(map[[2]byte]DirSum), seen: make(map[string]bool), seqs: make(map[string]int),
		newest: make(map[id.ID]stateRecord), derive: old == nil && cut,
	}
	st.peers.nums = make(map[string]uint64)
	refs, err := listSegments(s.dir)
	if err != nil {
		return rep, err
	}
	for _, n := range refs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Files++
		end, damaged, err := s.scanSegment(n, func(off int64, data []byte, f *decodedFile) error {
			return s.rebuildRecord(st, &rep, n, off, data, f)
		})
		if err != nil {
			return rep, err
		}
		for _, x := range damaged {
			rep.Corrupt = append(rep.Corrupt, fmt.Sprintf("%s+%d", n.rel(), x.start))
			if cut {
				if err := s.quarantine(n, x); err != nil {
					return rep, err
				}
			}
		}
		if len(damaged) > 0 {
			rep.Damaged = append(rep.Damaged, n.rel())
		}
		if err := s.cutTail(n, end, cut, &rep); err != nil {
			return rep, err
		}
		if end > 0 {
			st.batch.Put(segEndKey(n.id), binary.AppendUvarint(nil, uint64(end)))
		}
		if err := st.flush(); err != nil {
			return rep, err
		}
	}
	b := &st.batch
	for p, d := range st.leaf {
		b.Put(hashKey(LeafLevel, p[:]), d.encode())
	}
	for i, d := range st.level {
		if d.Count > 0 {
			b.Put(hashKey(1, []byte{byte(i)}), d.encode())
		}
	}
	if st.root.Count > 0 {
		b.Put(hashKey(RootLevel, nil), st.root.encode())
		b.Put(metaStatsKey, st.ctr.encode())
	}
	for _, rec := range st.newest {
		if !st.derive {
			break
		}
		b.Put(crawlStateKey(rec.URL), rec.encode())
	}
	if old != nil {
		for _, p := range []byte{pCrawl, pState, pTouch, pWitness, pUndated} {
			it := old.NewIterator(util.BytesPrefix([]byte{p}), nil)
			for it.Next() {
				key, val := slices.Clone(it.Key()), slices.Clone(it.Value())
				if p == pCrawl || p == pState {
					// The key in host order names the URL; a state under
					// its URL's hash (an index no open has moved,
					// statekeys.go) is read for it and goes to its key
					// in host order.
					url, ok := crawlStateURL(key)
					if !ok {
						rec, err := decodeState(val)
						if err != nil || rec.URL == "" {
							continue // the crawler derives it again
						}
						url, key = rec.URL, crawlStateKey(rec.URL)
					}
					if len(val) > 0 && val[0] == stateBinaryVersioned && !st.hasURL(id.OfString(url)) {
						// No version of its URL came back from the
						// segments (cut, refused, purged): the state no
						// longer proves one (TouchState).
						val[0] = stateBinary
					}
				}
				b.Put(key, val)
			}
			it.Release()
			if err := it.Error(); err != nil {
				return rep, err
			}
		}
	}
	return rep, db.Write(b, &opt.WriteOptions{Sync: true})
}

// flush writes the pending batch (unsynced: build syncs its last write).
func (st *rebuildState) flush() error {
	if st.batch.Len() == 0 {
		return nil
	}
	err := st.db.Write(&st.batch, nil)
	st.batch.Reset()
	return err
}

// rebuildRecord indexes one valid record found at off in segment n.
func (s *Store) rebuildRecord(st *rebuildState, rep *Report, n segRef, off int64, data []byte, f *decodedFile) error {
	c := &f.capture
	v := Version{
		URL: c.URL, Key: id.OfString(c.URL), Digest: f.digest, Day: s.DayOf(c.Time), Time: c.Time, Status: c.Status,
		ContentType: MediaType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), Peer: c.Peer, Browser: c.Browser, Imported: c.Imported,
		File: n.rel(), Offset: off, Size: int64(len(data)),
	}
	vk := versionKey(v.Key, v.Time, v.Digest)
	if st.seen[string(vk)] || (v.Peer != "" && s.refused.has(v.Peer)) || s.urlp.covers(v.URL, v.Time) {
		rep.Skipped++
		return nil
	}
	st.seen[string(vk)] = true
	sk := string(encDay(append(v.Key[:], v.Digest[:]...), v.Day))
	v.Seq = st.seqs[sk]
	st.seqs[sk] = v.Seq + 1
	st.batch.Put(vk, encodeVersion(v, n.id, st.peers.number(v.Peer, &st.batch)))
	hk := hostKey(hostOf(v.URL), v.URL)
	if !st.hasURL(v.Key) {
		st.ctr.urls++
	}
	st.batch.Put(hk, nil)
	st.ctr.versions++
	st.ctr.bytes += v.Size
	st.ctr.payload += v.Length
	es := entrySum(v.Entry())
	leaf := st.leaf[[2]byte{v.Key[0], v.Key[1]}]
	leaf.add(es)
	st.leaf[[2]byte{v.Key[0], v.Key[1]}] = leaf
	st.level[v.Key[0]].add(es)
	st.root.add(es)
	rep.Versions++
	rep.Bytes += v.Size
	if n, ok := st.newest[v.Key]; !ok || n.State.Checked.Before(v.Time) {
		st.newest[v.Key] = derivedState(v, c.Header)
	}
	if st.batch.Len() >= 4096 {
		return st.flush()
	}
	return nil
}

// hasURL reports whether a version of k was indexed before (newest holds
// every key seen, derived or not).
func (st *rebuildState) hasURL(k id.ID) bool {
	_, ok := st.newest[k]
	return ok
}

// derivedState is the crawl state a record implies when no index
// remembers better: validators and digest of the newest version. Outlinks
// stay empty, so the next crawl forwards all links of the page once.
func derivedState(v Version, h http.Header) stateRecord {
	return stateRecord{URL: v.URL, State: CrawlState{
		ETag: h.Get("Etag"), LastModified: h.Get("Last-Modified"), Digest: v.Digest, Checked: v.Time,
	}, versioned: true}
}

// scanSegment calls fn for each valid record of segment r, in order,
// and returns the end of the last one (past it the segment holds no
// valid record) and the extents of damaged bytes before that end: after
// a bad record the scan resumes at the next gzip header (zstd frame
// magic) that starts a valid record. A .warc.zst segment whose dictionary
// frame is damaged holds no valid record.
func (s *Store) scanSegment(r segRef, fn func(off int64, data []byte, f *decodedFile) error) (int64, []extent, error) {
	f, err := os.Open(filepath.Join(s.dir, segmentsDir, r.name()))
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	scan, magic := scanMembers, []byte{0x1f, 0x8b, 0x08}
	var good, pos int64
	if r.zst {
		zd, head, err := s.segmentDict(f, fi.Size())
		if err != nil {
			s.log.Error("segment's dictionary frame is damaged", "segment", r.name(), "err", err)
			return 0, nil, nil
		}
		good, pos = head, head
		scan = func(f *os.File, off int64, fn func(int64, []byte, *decodedFile) error) (int64, error) {
			return scanFrames(f, zd, off, fi.Size(), fn)
		}
		magic = binary.LittleEndian.AppendUint32(nil, zstdMagic)
	}
	var damaged []extent
	for pos < fi.Size() {
		end, err := scan(f, pos, func(off int64, data []byte, d *decodedFile) error {
			if off > good {
				damaged = append(damaged, extent{good, off})
			}
			good = off + int64(len(data))
			return fn(off, data, d)
		})
		if err != nil {
			return good, damaged, err
		}
		if end >= fi.Size() {
			break
		}
		// A bad record at end: look for the next record's magic.
		if pos, err = nextMagic(f, magic, end+1, fi.Size()); err != nil {
			return good, damaged, err
		}
	}
	return good, damaged, nil
}

// scanMembers decodes gzip records from off on until one fails, calling
// fn for each, and returns where the failing one starts (the size at EOF).
func scanMembers(f *os.File, off int64, fn func(off int64, data []byte, d *decodedFile) error) (int64, error) {
	cr := &countingReader{r: bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 1<<20), n: off}
	var zr gzip.Reader
	for {
		start := cr.n
		if _, err := cr.r.Peek(1); err == io.EOF {
			return start, nil
		}
		if err := zr.Reset(cr); err != nil {
			return start, nil
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, &zr); err != nil {
			return start, nil
		}
		size := cr.n - start
		if size > 2*maxBlock {
			return start, nil
		}
		data := make([]byte, size)
		if _, err := f.ReadAt(data, start); err != nil {
			return start, err
		}
		d, err := decodeMember(data)
		if err != nil {
			return start, nil
		}
		if err := fn(start, data, d); err != nil {
			return start, err
		}
	}
}

// scanFrames is scanMembers for the zstd frames of a segment of
// dictionary zd and size bytes.
func scanFrames(f *os.File, zd *zdict, off, size int64, fn func(off int64, data []byte, d *decodedFile) error) (int64, error) {
	for off < size {
		end, _, err := zstdFrameEnd(f, off, size)
		if err != nil || end-off > 2*maxBlock {
			return off, nil
		}
		data := make([]byte, end-off)
		if _, err := f.ReadAt(data, off); err != nil {
			return off, err
		}
		d, err := decodeFrame(zd, data, nil)
		if err != nil {
			return off, nil
		}
		if err := fn(off, data, d); err != nil {
			return off, err
		}
		off = end
	}
	return size, nil
}

// nextMagic returns the offset of the next occurrence of magic at or
// after off, or size if there is none.
func nextMagic(f *os.File, magic []byte, off, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off < size {
		k, err := f.ReadAt(buf, off)
		if k == 0 && err != nil {
			return size, nil
		}
		if i := bytes.Index(buf[:k], magic); i >= 0 {
			return off + int64(i), nil
		}
		if k < len(magic) {
			return size, nil
		}
		off += int64(k - len(magic) + 1)
	}
	return size, nil
}

// countingReader counts the bytes gzip consumed; as a ByteReader it keeps
// gzip from reading ahead, so the count is the exact end of each member.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// cutTail reports, and with cut set removes, the bytes of segment n past
// end: they are copied to quarantine/<segment>.<end> (synced) before the
// segment is truncated, so nothing is lost.
func (s *Store) cutTail(n segRef, end int64, cut bool, rep *Report) error {
	path := filepath.Join(s.dir, segmentsDir, n.name())
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() <= end {
		return nil
	}
	rep.Corrupt = append(rep.Corrupt, fmt.Sprintf("%s+%d", n.rel(), end))
	s.log.Warn("segment holds no valid record past an offset", "segment", n.name(), "offset", end, "size", fi.Size())
	if !cut {
		return nil
	}
	src, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	err = s.toQuarantine(n, end, io.NewSectionReader(src, end, fi.Size()-end))
	if err == nil {
		err = src.Truncate(end)
	}
	if err == nil {
		err = src.Sync()
	}
	return err
}

// extent is a range of bytes [start, end) of a segment.
type extent struct{ start, end int64 }

// quarantine copies the damaged bytes x of segment n to
// quarantine/<segment>.<offset>, synced, and leaves them in place.
func (s *Store) quarantine(n segRef, x extent) error {
	src, err := os.Open(filepath.Join(s.dir, segmentsDir, n.name()))
	if err != nil {
		return err
	}
	defer src.Close()
	return s.toQuarantine(n, x.start, io.NewSectionReader(src, x.start, x.end-x.start))
}

// toQuarantine writes r to quarantine/<segment>.<offset>, synced with its
// directory.
func (s *Store) toQuarantine(n segRef, off int64, r io.Reader) error {
	qdir := filepath.Join(s.dir, "quarantine")
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return err
	}
	dst, err := os.Create(filepath.Join(qdir, fmt.Sprintf("%s.%d", n.name(), off)))
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, r)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(qdir)
	}
	return err
}

// compareIndexes merges the live and rebuilt indexes in key order and
// records their differences in rep, naming segments by files (id → path).
// Crawl states and checks are skipped: no file records them.
func compareIndexes(live, rebuilt *leveldb.DB, files map[uint32]string, rep *Report) error {
	where := func(sv storedVersion) string {
		if f, ok := files[sv.seg]; ok {
			return fmt.Sprintf("%s+%d %s", f, sv.Offset, sv.URL)
		}
		return fmt.Sprintf("%s+%d %s", sv.File, sv.Offset, sv.URL)
	}
	var livePeers, rebuiltPeers peerTable
	if err := livePeers.load(live); err != nil {
		return err
	}
	if err := rebuiltPeers.load(rebuilt); err != nil {
		return err
	}
	a := live.NewIterator(nil, nil)
	defer a.Release()
	b := rebuilt.NewIterator(nil, nil)
	defer b.Release()
	okA, okB := nextDerived(a), nextDerived(b)
	for okA || okB {
		c := 0
		switch {
		case !okA:
			c = 1
		case !okB:
			c = -1
		default:
			c = bytes.Compare(a.Key(), b.Key())
		}
		switch {
		case c < 0: // only in the live index
			if a.Key()[0] == pVersion {
				sv, err := decodeStored(a.Key(), a.Value())
				if err != nil {
					return err
				}
				rep.Missing = append(rep.Missing, where(sv))
			} else {
				rep.Mismatched++
			}
			okA = nextDerived(a)
		case c > 0: // only in the files
			if b.Key()[0] == pVersion {
				sv, err := decodeStored(b.Key(), b.Value())
				if err != nil {
					return err
				}
				rep.Unindexed = append(rep.Unindexed, where(sv))
			} else {
				rep.Mismatched++
			}
			okB = nextDerived(b)
		default:
			if !sameValue(&livePeers, &rebuiltPeers, a.Key(), a.Value(), b.Value()) {
				rep.Mismatched++
			}
			okA, okB = nextDerived(a), nextDerived(b)
		}
	}
	if err := a.Error(); err != nil {
		return err
	}
	return b.Error()
}

// sameValue compares two values of one key; version values are compared
// with their peers' names, since the interned numbers depend on the order
// in which the peers were first seen.
func sameValue(pa, pb *peerTable, key, a, b []byte) bool {
	switch key[0] {
	case pHost:
		return true // the value carries nothing (older stores: the key)
	case pVersion:
	default:
		return bytes.Equal(a, b)
	}
	va, errA := decodeStored(key, a)
	vb, errB := decodeStored(key, b)
	if errA != nil || errB != nil {
		return false
	}
	va.Peer, vb.Peer = pa.name(va.peer), pb.name(vb.peer)
	return va.Version == vb.Version
}

// nextDerived advances it to the next key that the segments determine:
// not crawl states, checks or the peer table.
func nextDerived(it iterator.Iterator) bool {
	for it.Next() {
		if k := it.Key(); len(k) > 0 && k[0] != pCrawl && k[0] != pState && k[0] != pTouch && k[0] != pPeer && k[0] != pWitness && k[0] != pUndated {
			return true
		}
	}
	return false
}
