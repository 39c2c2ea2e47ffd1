package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
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
	b leveldb.Batch
	// ends holds, for each segment the group's records went to, the end
	// of the last of them: the committer syncs those segments before it
	// writes b, and records the ends in b.
	ends map[*segment]int64
	// sums holds the newest sum of each directory the group changed and
	// stats the totals after its last version (nil if it counted
	// nothing): the committer writes each once, however many of the
	// group's versions changed it, so the index does not keep an
	// obsolete root sum and totals per version until goleveldb compacts.
	sums  map[string]DirSum
	stats []byte
	gen   uint64   // position in the commit order, from 1
	delta counters // what the group adds to the totals
	done  chan struct{}
	err   error
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
	go s.committer()
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

// index records a version whose record was appended to seg at v.Offset:
// version key, host entry, directory hashes and totals, and the encoded
// crawl state if not nil, in the index group forming, and waits until the
// group is committed (its segments and its index write synced, unless
// NoSync).
func (s *Store) index(v Version, seg *segment, first bool, state []byte, w *Witness) error {
	s.mu.Lock()
	g, err := s.enqueueLocked(v, seg, first, state, w)
	s.mu.Unlock()
	if err != nil {
		s.log.Error("index write failed; the record stays unindexed in its segment", "file", v.File, "offset", v.Offset, "err", err)
		return err
	}
	<-g.done
	return g.err
}

// enqueueLocked appends the index batch of a written version (and its
// encoded crawl state and the store's witness statement, if not nil) to
// the group forming and returns that group. The caller holds s.mu.
func (s *Store) enqueueLocked(v Version, seg *segment, first bool, state []byte, w *Witness) (*indexGroup, error) {
	s.pending -= v.Size
	if s.shareCap(v.Peer) > 0 {
		s.signerPending[v.Peer] -= v.Size
	}
	s.addRangeLocked(v.Key, -v.Size, true)
	s.endWriteLocked()
	if s.gc.closing || s.gc.stopped == nil {
		return nil, errStoreClosed
	}
	if err := s.failure(); err != nil {
		return nil, err
	}
	keys, sums, err := s.sumsLocked(v.Entry(), 1)
	if err != nil {
		return nil, err
	}
	g := s.formingLocked()
	g.b.Put(versionKey(v.Key, v.Time, v.Digest), encodeVersion(v, seg.id, s.peers.number(v.Peer, &g.b)))
	if s.quota > 0 && v.Peer != "" {
		s.signerBytes[v.Peer] += v.Size
	}
	s.addRangeLocked(v.Key, v.Size, false)
	if end := v.Offset + v.Size; end > g.ends[seg] {
		g.ends[seg] = end
	}
	if first {
		g.b.Put(hostKey(hostOf(v.URL), v.URL), nil)
	}
	if state != nil {
		g.b.Put(crawlStateKey(v.URL), state)
	}
	if w != nil {
		putWitness(&g.b, v, *w)
		if w.Seen.Sub(v.Time) > MaxWitnessDelay {
			g.b.Put(undatedKey(v), nil)
		}
	}
	s.putSumsLocked(g, keys, sums)
	d := counters{versions: 1, bytes: v.Size, payload: v.Length}
	if first {
		d.urls = 1
	}
	s.countLocked(g, d)
	return g, nil
}

// sumsLocked returns the keys and current sums of e's leaf, level-1 and
// root directories with e added (delta 1) or taken out (delta -1): XOR
// adds and removes alike. The caller holds s.mu.
func (s *Store) sumsLocked(e Entry, delta int64) ([LeafLevel + 1][]byte, [LeafLevel + 1]DirSum, error) {
	var keys [LeafLevel + 1][]byte
	var sums [LeafLevel + 1]DirSum
	for level := RootLevel; level <= LeafLevel; level++ {
		keys[level] = hashKey(level, e.Key[:])
		d, err := s.sumLocked(keys[level])
		if err != nil {
			return keys, sums, err
		}
		d.add(DirSum{Sum: e.hash(), Count: delta})
		sums[level] = d
	}
	return keys, sums, nil
}

// putSumsLocked records sums in the group g (written when it commits)
// and in the overlay of uncommitted sums. The caller holds s.mu.
func (s *Store) putSumsLocked(g *indexGroup, keys [LeafLevel + 1][]byte, sums [LeafLevel + 1]DirSum) {
	for level := RootLevel; level <= LeafLevel; level++ {
		g.sums[string(keys[level])] = sums[level]
		s.gc.sums[string(keys[level])] = pendingSum{sum: sums[level], gen: g.gen}
	}
}

// countLocked adds d to the totals and records them in g.
func (s *Store) countLocked(g *indexGroup, d counters) {
	g.delta.addCounters(d)
	s.ctr.addCounters(d)
	g.stats = s.ctr.encode()
}

// finish adds to g's batch the sums and totals it changed, once each.
func (g *indexGroup) finish() {
	for k, d := range g.sums {
		if d.Count == 0 {
			g.b.Delete([]byte(k))
		} else {
			g.b.Put([]byte(k), d.encode())
		}
	}
	if g.stats != nil {
		g.b.Put(metaStatsKey, g.stats)
	}
}

// formingLocked returns the group forming, starting one if there is
// none. The caller holds s.mu.
func (s *Store) formingLocked() *indexGroup {
	g := s.gc.cur
	if g == nil {
		s.gc.gen++
		g = &indexGroup{gen: s.gc.gen, ends: make(map[*segment]int64), sums: make(map[string]DirSum), done: make(chan struct{})}
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

// committer commits the groups in order until stopCommitter; with a CPU
// gate it runs on a thread of its own at the gate's workers' lower
// priority (startCommitter). A group's commit fsyncs the segments its
// records went to, then writes its index batch (with the segments' new
// durable ends) in one synced write, so the index never names a record
// that a crash could lose. A failed sync or write fails the store
// (segment.go): that group and every later one fail without writing, so
// no group built on a failed one's sums and totals is ever committed, and
// the totals in memory drop them.
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
		g.err = s.commitGroup(g)
		s.mu.Lock()
		for k, p := range s.gc.sums {
			if p.gen <= g.gen {
				delete(s.gc.sums, k) // committed (or failed: the store refuses writes now)
			}
		}
		if g.err != nil {
			s.ctr.addCounters(g.delta.negate())
		}
		s.gc.commits++
		s.mu.Unlock()
		close(g.done)
	}
}

// commitGroup syncs g's segments and writes its batch.
func (s *Store) commitGroup(g *indexGroup) error {
	if err := s.failure(); err != nil {
		return err
	}
	g.finish()
	for seg, end := range g.ends {
		if !s.noSync {
			if err := seg.f.Sync(); err != nil {
				return s.fail(fmt.Errorf("sync segment %s: %w", seg.name(), err))
			}
		}
		if end > seg.durable {
			g.b.Put(segEndKey(seg.id), binary.AppendUvarint(nil, uint64(end)))
		}
	}
	if err := s.db.Write(&g.b, s.wo); err != nil {
		return s.fail(fmt.Errorf("index write: %w", err))
	}
	for seg, end := range g.ends {
		seg.durable = max(seg.durable, end)
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
