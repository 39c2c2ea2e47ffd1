package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// PurgeReport is what Purge did.
type PurgeReport struct {
	Peer   string `json:"peer"`
	Purged int    `json:"purged"` // versions taken out of the index
}

// Purge is PurgePeer on the store in dir, which must not be open (herod
// purge on a stopped node).
func Purge(ctx context.Context, dir, peer string, o Options) (PurgeReport, error) {
	rep := PurgeReport{Peer: peer}
	s, err := Open(dir, o)
	if err != nil {
		return rep, fmt.Errorf("archive purge: %w", err)
	}
	rep.Purged, err = s.PurgePeer(ctx, peer)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return rep, err
}

// Refuses reports whether the store refuses peer's records (PurgePeer).
func (s *Store) Refuses(peer string) bool { return s.refused.has(peer) }

// PurgePeer refuses peer's records from now on and takes every version it
// signed out of the index, returning how many. The peer is first added,
// durably, to the store's refused-peers file, so that Import refuses its
// records even if the purge is interrupted; then its versions are removed
// in one index group — version entries, the directory sums and totals
// replication compares, and, for a URL left without versions, its host
// entry and checks; the crawl state of every URL concerned, which may
// name a purged payload — so they are no longer served, exported,
// replicated or counted. Their records stay in their segments, unindexed,
// until the segment is rewritten (Reindex does not bring them back: it
// skips refused peers). Puts and Imports wait while it runs. A second call
// for the same peer returns 0.
func (s *Store) PurgePeer(ctx context.Context, peer string) (int, error) {
	if peer == "" {
		return 0, errors.New("archive purge: no peer")
	}
	if s.closed.Load() {
		return 0, errors.New("archive purge: store closed")
	}
	if err := addRefused(s.dir, peer); err != nil {
		return 0, fmt.Errorf("archive purge: refuse %s: %w", peer, err)
	}
	s.refused.add(peer)
	num, ok := s.peers.lookup(peer)
	if !ok {
		return 0, nil // it signed nothing here
	}
	for i := range s.keyLocks {
		s.keyLocks[i].Lock()
		defer s.keyLocks[i].Unlock()
	}
	victims, err := s.versionsOf(ctx, num)
	if err != nil || len(victims) == 0 {
		return 0, err
	}
	s.mu.Lock()
	g, err := s.removeLocked(victims)
	s.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("archive purge: %w", err)
	}
	<-g.done
	if g.err != nil {
		return 0, fmt.Errorf("archive purge: %w", g.err)
	}
	s.log.Info("purged a peer's versions", "peer", peer, "versions", len(victims))
	return len(victims), nil
}

// victim is a version to remove and whether it is its URL's last.
type victim struct {
	v    Version
	last bool
}

// versionsOf lists the versions signed by peer number num, marking those
// that leave their URL without versions.
func (s *Store) versionsOf(ctx context.Context, num uint64) ([]victim, error) {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion}), nil)
	defer it.Release()
	var out []victim
	var key id.ID
	kept := false // key has a version not signed by num
	flush := func(from int) {
		for i := from; i < len(out); i++ {
			out[i].last = !kept
		}
	}
	start := 0
	for n := 0; it.Next(); n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		sv, err := decodeStored(it.Key(), it.Value())
		if err != nil {
			return nil, err
		}
		if sv.Key != key {
			flush(start)
			key, kept, start = sv.Key, false, len(out)
		}
		if sv.peer != num || sv.format != formatSegment {
			kept = true
			continue
		}
		out = append(out, victim{v: sv.Version})
	}
	flush(start)
	return out, it.Error()
}

// removeLocked takes victims out of the index in the group forming and
// returns that group. The caller holds s.mu and every key lock.
func (s *Store) removeLocked(victims []victim) (*indexGroup, error) {
	if s.gc.closing || s.gc.stopped == nil {
		return nil, errStoreClosed
	}
	if err := s.failure(); err != nil {
		return nil, err
	}
	g := s.formingLocked()
	gone := map[id.ID]bool{}
	for _, vc := range victims {
		v := vc.v
		keys, sums, err := s.sumsLocked(v.Entry(), -1)
		if err != nil {
			return nil, s.fail(fmt.Errorf("read sums: %w", err)) // the group holds earlier removals
		}
		s.putSumsLocked(g, keys, sums)
		g.b.Delete(versionKey(v.Key, v.Time, v.Digest))
		g.b.Delete(stateKey(v.Key)) // it may name the purged payload
		wks, err := s.witnessKeys(v)
		if err != nil {
			return nil, s.fail(fmt.Errorf("read witnesses: %w", err))
		}
		for _, k := range wks {
			g.b.Delete(k)
		}
		g.b.Delete(undatedKey(v))
		if s.quota > 0 && v.Peer != "" {
			s.signerBytes[v.Peer] -= v.Size
		}
		s.addRangeLocked(v.Key, -v.Size, false)
		d := counters{versions: -1, bytes: -v.Size, payload: -v.Length}
		if vc.last && !gone[v.Key] {
			gone[v.Key] = true
			d.urls = -1
			g.b.Delete(hostKey(hostOf(v.URL), v.URL))
			it := s.db.NewIterator(util.BytesPrefix(append([]byte{pTouch}, v.Key[:]...)), nil)
			for it.Next() {
				g.b.Delete(append([]byte(nil), it.Key()...))
			}
			it.Release()
		}
		s.countLocked(g, d)
	}
	return g, nil
}
