package archive

import (
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/herod-archive/herod/internal/cpugate"
)

// Group commit of index batches. Every new version updates shared keys
// (the root and first-level directory sums, the totals), so their
// read-modify-write must be ordered, and Put must not return before its
// batch is synced. Writing each batch under s.mu and syncing afterwards
// serialised every Put behind the previous one's fsync (goleveldb holds
// its write lock while it syncs the journal), capping the store at about
// one Put per fsync. Instead, index builds its batch under s.mu, reading
// the directory sums through an overlay of the sums that earlier batches
// wrote but that are not committed yet, and appends it to the group being
// formed; one committer goroutine writes each group with one synced write
// while the next group forms. The order of the groups, and of the batches
// in a group, is the order in which s.mu was taken, so the last write of a
// key is always its newest value.

// indexGroup is one group commit: the batches of the Puts that arrived
// while the previous group was being written.
type indexGroup struct {
	b     leveldb.Batch
	files []*pendingFile // written unsynced; synced and renamed before b
	gen   uint64         // position in the commit order, from 1
	delta counters       // what the group adds to the totals
	// deferred is how many files the group adds to the list of files
	// awaiting recompression (negative: takes off; deferred.go).
	deferred int64
	done     chan struct{}
	err      error
}

// pendingSum is a directory sum written to a group not committed yet.
type pendingSum struct {
	sum DirSum
	gen uint64 // the group that wrote it
}

// groupCommit is the committer's state, guarded by Store.mu.
type groupCommit struct {
	cond    *sync.Cond            // signalled when a group forms or on close
	cur     *indexGroup           // the group forming; nil if none
	gen     uint64                // generation of the newest group formed
	sums    map[string]pendingSum // directory sums of uncommitted groups
	commits int64                 // groups written since Open
	joined  chan struct{}         // a token when the last write under way reached the group (or gave up)
	closing bool
	stopped chan struct{} // closed when the committer has exited
}

var errStoreClosed = errors.New("store closed")

// startCommitter starts the goroutine that writes index groups; Close
// stops it after the last group.
func (s *Store) startCommitter() {
	s.gc = groupCommit{
		cond:    sync.NewCond(&s.mu),
		sums:    make(map[string]pendingSum),
		joined:  make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	if s.cpu == nil {
		go s.committer()
		return
	}
	// Its renames, syncs and index writes wait on the disk and are never
	// urgent: behind the fetches, as the gate's workers are. In the crawl
	// bench, four alternated pairs: mean time to response headers 231-276
	// µs against 239-320, pages/s +2% (inside the noise, docs/crawl.md).
	cpugate.GoLowPriority(s.committer)
}

// stopCommitter lets the committer write the group forming, if any, and
// waits for it to exit.
func (s *Store) stopCommitter() {
	s.mu.Lock()
	if s.gc.stopped == nil {
		s.mu.Unlock()
		return
	}
	s.gc.closing = true
	s.gc.cond.Signal()
	s.mu.Unlock()
	<-s.gc.stopped
}

// index records a written version: version key, host entry, directory
// hashes and totals, and the encoded crawl state if not nil, in the index
// group forming, and waits until the group is written (and synced, unless
// NoSync). mv, if not nil, is the version's file still in dir/tmp: the
// group syncs and renames it first (committer).
func (s *Store) index(v Version, e Entry, size int64, first, deferred bool, mv *pendingFile, state []byte) error {
	s.mu.Lock()
	g, err := s.enqueueLocked(v, e, size, first, deferred, state)
	if err == nil && mv != nil {
		g.files = append(g.files, mv)
	}
	s.mu.Unlock()
	if err != nil {
		if mv != nil {
			os.Remove(mv.tmp) // never placed: nothing to reindex
			s.log.Error("index write failed; version file dropped", "file", v.File, "err", err)
		} else {
			s.log.Error("index write failed; the file is stored and reindex will find it", "file", v.File, "err", err)
		}
		return err
	}
	<-g.done
	return g.err
}

// enqueueLocked appends the index batch of a written version (and its
// encoded crawl state, if not nil) to the group forming and returns that
// group; deferred lists the file for recompression. The caller holds s.mu.
func (s *Store) enqueueLocked(v Version, e Entry, size int64, first, deferred bool, state []byte) (*indexGroup, error) {
	s.pending -= size
	s.endWriteLocked()
	if s.gc.closing || s.gc.stopped == nil {
		return nil, errStoreClosed
	}
	var keys [LeafLevel + 1][]byte
	var sums [LeafLevel + 1]DirSum
	for level := RootLevel; level <= LeafLevel; level++ {
		keys[level] = hashKey(level, e.Key[:])
		d, err := s.sumLocked(keys[level])
		if err != nil {
			return nil, err
		}
		d.add(entrySum(e))
		sums[level] = d
	}
	g := s.formingLocked()
	g.b.Put(versionKey(v.Key, v.Time, v.Digest), encodeVersion(v, e.Seq))
	if deferred {
		g.b.Put(deferredKey(e), deferredValue(size))
		g.deferred++
	}
	if first {
		g.b.Put(hostKey(hostOf(v.URL), v.URL), v.Key[:])
	}
	if state != nil {
		g.b.Put(stateKey(v.Key), state)
	}
	for level := RootLevel; level <= LeafLevel; level++ {
		g.b.Put(keys[level], sums[level].encode())
		s.gc.sums[string(keys[level])] = pendingSum{sum: sums[level], gen: g.gen}
	}
	d := counters{versions: 1, bytes: size, payload: v.Length}
	if first {
		d.urls = 1
	}
	g.delta.addCounters(d)
	s.ctr.addCounters(d)
	g.b.Put(metaStatsKey, s.ctr.encode())
	return g, nil
}

// formingLocked returns the group forming, starting one if there is
// none. The caller holds s.mu.
func (s *Store) formingLocked() *indexGroup {
	g := s.gc.cur
	if g == nil {
		s.gc.gen++
		g = &indexGroup{gen: s.gc.gen, done: make(chan struct{})}
		s.gc.cur = g
		s.gc.cond.Signal()
	}
	return g
}

// sumLocked returns the current sum of a directory key: the newest
// uncommitted one if any, else the stored one. The caller holds s.mu.
func (s *Store) sumLocked(key []byte) (DirSum, error) {
	if p, ok := s.gc.sums[string(key)]; ok {
		return p.sum, nil
	}
	return s.getSum(key)
}

// committer writes the groups in order, one synced write each, until
// stopCommitter; with a CPU gate it runs on a thread of its own at the
// gate's workers' lower priority (startCommitter). With group sync it first makes the group's version files
// durable with one syncfs and renames them into place, so the index never
// names a file that a crash could leave partial, and one flush of the
// filesystem stands for an fsync per file. A failed write fails every Put
// of its group; files already renamed stay in place for Reindex, the
// others are removed, and the totals in memory drop the group.
func (s *Store) committer() {
	defer close(s.gc.stopped)
	for {
		s.mu.Lock()
		for s.gc.cur == nil && !s.gc.closing {
			s.gc.cond.Wait()
		}
		if s.window > 0 && s.gc.cur != nil {
			// Let the Puts and Imports already under way join this group
			// rather than sync again right after it (Options.CommitWindow).
			deadline := time.Now().Add(s.window)
			for s.writing > 0 && !s.gc.closing {
				wait := time.Until(deadline)
				if wait <= 0 {
					break
				}
				s.mu.Unlock()
				select {
				case <-s.gc.joined:
				case <-time.After(wait):
				}
				s.mu.Lock()
			}
		}
		g := s.gc.cur
		s.gc.cur = nil
		s.mu.Unlock()
		if g == nil {
			return
		}
		if len(g.files) > 0 {
			g.err = s.placeGroup(g.files)
		}
		if g.err == nil {
			g.err = s.db.Write(&g.b, s.wo)
		}
		if g.err != nil {
			s.log.Error("index group not committed; files already in place stay for reindex",
				"versions", g.delta.versions, "err", g.err)
		}
		s.mu.Lock()
		for k, p := range s.gc.sums {
			if p.gen <= g.gen {
				delete(s.gc.sums, k) // committed (or failed: the index has the older sum)
			}
		}
		if g.err != nil {
			s.ctr.addCounters(g.delta.negate())
		} else if g.deferred != 0 {
			s.rc.n.Add(g.deferred)
			if g.deferred > 0 {
				select {
				case s.rc.wake <- struct{}{}:
				default:
				}
			}
		}
		s.gc.commits++
		s.mu.Unlock()
		close(g.done)
	}
}

// syncFS flushes the filesystem of a directory; a variable so that tests
// can make it fail.
var syncFS = syncFilesystem

// placeGroup syncs the temporary files of a group (unless every one is
// synced already) and renames them into place. On error it removes the
// temporary files it did not rename.
func (s *Store) placeGroup(files []*pendingFile) error {
	// Replacements written without group sync are synced already
	// (writeReplacement); a group of those alone needs no syncfs.
	if slices.ContainsFunc(files, func(f *pendingFile) bool { return !f.synced }) {
		if err := syncFS(s.dir); err != nil {
			for _, f := range files {
				os.Remove(f.tmp)
			}
			return err
		}
	}
	for i, f := range files {
		if err := renameFile(f.tmp, f.final); err != nil {
			for _, g := range files[i:] {
				os.Remove(g.tmp)
			}
			return err
		}
	}
	return nil
}

func (c *counters) addCounters(d counters) {
	c.versions += d.versions
	c.urls += d.urls
	c.bytes += d.bytes
	c.payload += d.payload
}

func (c counters) negate() counters {
	return counters{-c.versions, -c.urls, -c.bytes, -c.payload}
}

// syncKey was rewritten (empty) by every index sync before groups were
// committed with one synced write; stores written then still hold it, and
// it carries no data (compareIndexes skips it).
var syncKey = []byte{pMeta, 's', 'y', 'n', 'c'}
