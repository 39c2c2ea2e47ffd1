package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Refuses reports whether the store refuses the records signed by peer
// (PurgePeer or Purge refused it).
func (s *Store) Refuses(peer string) bool { return s.refused.has(peer) }

// purgedVersion is one indexed version PurgePeer removes.
type purgedVersion struct {
	v     Version
	e     Entry
	size  int64 // the file's size, as the totals count it
	moved bool  // in purged/ already (a purge cut short)
}

// PurgePeer is Purge on an open store: it refuses peer from now on (the
// refused-peers file is written first, and Import refuses the peer's
// records as soon as it is), then removes from the index every version
// whose record peer signed — version key, directory sums, totals, the
// deferred-compression list, the URL's host entry when no version is left
// and its crawl state — and moves each file to dir/purged/ (same
// relative path), so that nothing reads, serves, exports or replicates it
// again. It returns how many versions it removed. Calling it again for
// the same peer finishes an interrupted purge and removes nothing more.
//
// Recompression waits while it runs, and each URL's Puts and Imports wait
// while that URL's versions are removed. An Import that passed its
// provenance check before the peer was refused can still index a version
// of the peer's after the scan went past it; callers that import
// concurrently hold their imports back while PurgePeer runs (the node
// does).
func (s *Store) PurgePeer(ctx context.Context, peer string) (int, error) {
	if peer == "" {
		return 0, errors.New("archive purge: no peer")
	}
	if s.closed.Load() {
		return 0, errors.New("archive purge: store closed")
	}
	if err := addRefused(s.dir, peer); err != nil {
		return 0, fmt.Errorf("archive purge: %w", err)
	}
	s.refused.mu.Lock()
	if s.refused.m == nil {
		s.refused.m = map[string]bool{}
	}
	s.refused.m[peer] = true
	s.refused.mu.Unlock()

	s.rc.mu.Lock() // no file is replaced while it is moved away
	defer s.rc.mu.Unlock()
	byKey, err := s.scanPeer(ctx, peer)
	if err != nil {
		return 0, fmt.Errorf("archive purge: %w", err)
	}
	keys := make([]id.ID, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b id.ID) int { return a.Cmp(b) })
	var groups []*indexGroup
	n := 0
	for _, k := range keys {
		g, err := s.purgeKey(k, byKey[k])
		if err != nil {
			return n, fmt.Errorf("archive purge: %w", err)
		}
		if len(groups) == 0 || groups[len(groups)-1] != g {
			groups = append(groups, g)
		}
		n += len(byKey[k])
	}
	var first error
	for _, g := range groups {
		<-g.done
		if g.err != nil && first == nil {
			first = fmt.Errorf("archive purge: %w", g.err)
		}
	}
	if first != nil {
		return n, first
	}
	s.log.Info("purged a peer's versions from the open store", "peer", peer, "versions", n)
	return n, nil
}

// scanPeer returns, by URL key, the indexed versions whose record peer
// signed. A version whose file is missing but sits in purged/ (a purge
// cut short after the move) counts as the peer's.
func (s *Store) scanPeer(ctx context.Context, peer string) (map[id.ID][]purgedVersion, error) {
	out := map[id.ID][]purgedVersion{}
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion}), nil)
	defer it.Release()
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := decodeVersion(it.Key(), it.Value())
		if err != nil {
			return nil, err
		}
		e, err := parsePath(v.File)
		if err != nil {
			return nil, err
		}
		data, err := s.readRaw(v.File)
		if errors.Is(err, ErrNotFound) {
			if fi, serr := os.Stat(filepath.Join(s.dir, "purged", filepath.FromSlash(v.File))); serr == nil {
				out[v.Key] = append(out[v.Key], purgedVersion{v: v, e: e, size: fi.Size(), moved: true})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		f, err := decodeMember(data)
		if err != nil || f.capture.Peer != peer {
			continue // not the peer's (a corrupt file is Fsck's to report)
		}
		out[v.Key] = append(out[v.Key], purgedVersion{v: v, e: e, size: int64(len(data))})
	}
	return out, it.Error()
}

// purgeKey moves the files of vs, versions of the URL key k, to purged/
// and queues their removal from the index; it returns the group to wait
// for.
func (s *Store) purgeKey(k id.ID, vs []purgedVersion) (*indexGroup, error) {
	lk := &s.keyLocks[k[id.Size-1]]
	lk.Lock()
	defer lk.Unlock()
	left := 0
	it := s.db.NewIterator(util.BytesPrefix(versionPrefix(k)), nil)
	for it.Next() {
		left++
	}
	it.Release()
	if err := it.Error(); err != nil {
		return nil, err
	}
	left -= len(vs)
	deferred := make([]bool, len(vs))
	for i, p := range vs {
		ok, err := s.db.Has(deferredKey(p.e), nil)
		if err != nil {
			return nil, err
		}
		deferred[i] = ok
		if !p.moved {
			if err := s.moveTo("purged", p.v.File); err != nil {
				return nil, err
			}
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gc.closing || s.gc.stopped == nil {
		return nil, errStoreClosed
	}
	g := s.formingLocked()
	var d counters
	for level := RootLevel; level <= LeafLevel; level++ {
		key := hashKey(level, k[:])
		sum, err := s.sumLocked(key)
		if err != nil {
			return nil, err
		}
		for _, p := range vs {
			sum.add(DirSum{Sum: p.e.hash(), Count: -1})
		}
		if sum.Count == 0 {
			g.b.Delete(key) // as a store that never held them
		} else {
			g.b.Put(key, sum.encode())
		}
		s.gc.sums[string(key)] = pendingSum{sum: sum, gen: g.gen}
	}
	for i, p := range vs {
		g.b.Delete(versionKey(p.v.Key, p.v.Time, p.v.Digest))
		if deferred[i] {
			g.b.Delete(deferredKey(p.e))
			g.deferred--
		}
		d.addCounters(counters{versions: -1, bytes: -p.size, payload: -p.v.Length})
	}
	if left <= 0 {
		g.b.Delete(hostKey(hostOf(vs[0].v.URL), vs[0].v.URL))
		d.urls = -1
	}
	g.b.Delete(stateKey(k)) // it may name the peer's payloads
	g.delta.addCounters(d)
	s.ctr.addCounters(d)
	g.b.Put(metaStatsKey, s.ctr.encode())
	return g, nil
}
