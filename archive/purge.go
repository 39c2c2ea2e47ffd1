package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// Counted before the key locks are let go (deferred after them), once
	// the removal is committed: a crawl state read before it is no
	// longer proof of a version (TouchState).
	defer s.purges.Add(1)
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
	return s.scanVictims(ctx, func(_, _ []byte, sv *storedVersion, _ bool) (Version, bool, error) {
		return sv.Version, sv.peer == num && sv.format == formatSegment, nil
	})
}

// scanVictims lists, in index order, the stored versions take picks,
// marking those that leave their URL without versions. take sees each
// stored version (its index key and value, decoded as sv; first for its
// URL's first) and returns the version to remove, ok false to keep it.
func (s *Store) scanVictims(ctx context.Context, take func(k, val []byte, sv *storedVersion, first bool) (v Version, ok bool, err error)) ([]victim, error) {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion}), nil)
	defer it.Release()
	var out []victim
	var key id.ID
	kept, start := false, 0 // key has a version take keeps; its first in out
	flush := func() {
		for i := start; i < len(out); i++ {
			out[i].last = !kept
		}
	}
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
		first := sv.Key != key
		if first {
			flush()
			key, kept, start = sv.Key, false, len(out)
		}
		v, ok, err := take(it.Key(), it.Value(), &sv, first)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			kept = true
		default:
			out = append(out, victim{v: v})
		}
	}
	flush()
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
		g.b.Delete(crawlStateKey(v.URL)) // it may name the purged payload
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

// Purge by URL. A takedown (an access rule of action purge: package
// archive/access, node/access.go) removes the captures of a SURT prefix,
// or of one URL, within a capture-date window, from the store: index
// entries and bytes. PurgeURLs
//
//  1. records the purge in the store's purged-urls file (synced): from
//     then on Put and Import refuse a covered capture (ErrPurged) and
//     Reindex leaves covered records out, so nothing brings them back;
//  2. takes the covered versions out of the index in one group, as
//     PurgePeer does (removeLocked);
//  3. rewrites, while the store stays open, every segment that held one
//     of them without its dead records (compactOnline, compact.go);
//  4. records the purge done (synced).
//
// A crash anywhere leaves the purge recorded: the captures are refused
// and, unless step 2 committed, still indexed; PurgeURLs called again
// (the node does so at every start for every purge rule in force) redoes
// steps 2-4, and step 3 then rewrites every segment with dead bytes,
// since which held the victims is no longer known. A purge done is not
// done again. Unpurge withdraws the refusal; the bytes do not come back.

// purgedFile lists the URL purges of a store, one JSON record a line.
const purgedFile = "purged-urls"

// ErrPurged reports a capture refused because a URL purge of the store
// covers it (PurgeURLs). Put wraps it in ErrBadCapture (the crawler
// drops the entry), Import in ErrCorrupt, as it does a refused peer's
// record.
var ErrPurged = errors.New("archive: the capture is purged")

// URLPurge names the captures a URL purge removes: those whose URL's SURT
// key (Surt) starts with SURT, or equals it with Exact, and whose capture
// time lies in [After, Before) (a zero bound is no bound).
type URLPurge struct {
	// ID names the purge; a purge of the same ID replaces it.
	ID     string    `json:"id"`
	SURT   string    `json:"surt"` // "" with no Exact: every URL
	Exact  bool      `json:"exact,omitempty"`
	After  time.Time `json:"after,omitzero"`
	Before time.Time `json:"before,omitzero"`
}

// Covers reports whether p covers the capture of url at t.
func (p URLPurge) Covers(url string, t time.Time) bool {
	return p.holds(t) && p.keyCovers(subjectSurt(url))
}

func (p URLPurge) holds(t time.Time) bool {
	return (p.After.IsZero() || !t.Before(p.After)) && (p.Before.IsZero() || t.Before(p.Before))
}

func (p URLPurge) keyCovers(k string) bool {
	if p.Exact {
		return k == p.SURT
	}
	return strings.HasPrefix(k, p.SURT)
}

func (p URLPurge) same(q URLPurge) bool {
	return p.ID == q.ID && p.SURT == q.SURT && p.Exact == q.Exact && p.After.Equal(q.After) && p.Before.Equal(q.Before)
}

// purgedRecord is one line of the purged-urls file: a purge recorded, a
// purge done, or a purge withdrawn.
type purgedRecord struct {
	Purge   *URLPurge `json:"purge,omitempty"`
	Done    string    `json:"done,omitempty"`
	Revoked string    `json:"revoked,omitempty"`
}

// urlPurges is the URL purges of a store in force.
type urlPurges struct {
	run  sync.Mutex // serializes PurgeURLs and Unpurge
	mu   sync.Mutex // guards m and done; held briefly (Put and Import read m holding a key lock)
	m    map[string]URLPurge
	done map[string]bool
	n    atomic.Int32 // len(m), read without the lock
}

// covers reports whether a purge in force covers the capture of url at t.
func (u *urlPurges) covers(url string, t time.Time) bool {
	if u.n.Load() == 0 {
		return false
	}
	k := subjectSurt(url)
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range u.m {
		if p.holds(t) && p.keyCovers(k) {
			return true
		}
	}
	return false
}

// loadPurged reads dir's purged-urls file into u; a missing file holds
// none. A torn last line (a crash while appending) is ignored: its purge
// was not recorded, so nothing of it was done.
func (u *urlPurges) load(dir string) error {
	u.m, u.done = map[string]URLPurge{}, map[string]bool{}
	b, err := os.ReadFile(filepath.Join(dir, purgedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var r purgedRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			if i == len(lines)-1 {
				// Torn by a crash: never synced, never acted on. Cut off,
				// so the next record starts a line.
				if err := os.Truncate(filepath.Join(dir, purgedFile), int64(len(b)-len(l))); err != nil {
					return err
				}
				break
			}
			return fmt.Errorf("%s line %d: %w", purgedFile, i+1, err)
		}
		switch {
		case r.Purge != nil:
			u.m[r.Purge.ID] = *r.Purge
			delete(u.done, r.Purge.ID)
		case r.Done != "":
			u.done[r.Done] = true
		case r.Revoked != "":
			delete(u.m, r.Revoked)
			delete(u.done, r.Revoked)
		}
	}
	u.n.Store(int32(len(u.m)))
	return nil
}

// appendPurged appends r to dir's purged-urls file, synced, and the
// file's creation with a sync of dir.
func appendPurged(dir string, r purgedRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return appendSynced(dir, purgedFile, append(line, '\n'))
}

// URLPurges returns the URL purges in force, by ID.
func (s *Store) URLPurges() []URLPurge {
	s.urlp.mu.Lock()
	defer s.urlp.mu.Unlock()
	out := make([]URLPurge, 0, len(s.urlp.m))
	for _, p := range s.urlp.m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b URLPurge) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// PurgeURLs removes the captures p covers from the store — index entries
// and their records' bytes — and refuses them from then on (Put and
// Import return ErrPurged; see above for the steps and what a crash
// leaves). It returns how many versions it removed; a purge already done
// returns 0 at once. Puts and Imports wait while it runs; reads go on
// (a read that races a segment's rewrite looks the version up again).
func (s *Store) PurgeURLs(ctx context.Context, p URLPurge) (int, error) {
	if p.ID == "" {
		return 0, errors.New("archive purge urls: no id")
	}
	if !p.After.IsZero() && !p.Before.IsZero() && !p.After.Before(p.Before) {
		return 0, fmt.Errorf("archive purge urls: after %s is not before %s", p.After, p.Before)
	}
	if s.closed.Load() {
		return 0, errStoreClosed
	}
	u := &s.urlp
	u.run.Lock()
	defer u.run.Unlock()
	u.mu.Lock()
	old, have := u.m[p.ID]
	done := u.done[p.ID]
	u.mu.Unlock()
	if have && old.same(p) && done {
		return 0, nil
	}
	recovering := have && old.same(p) // recorded, not done: a crash cut it short
	if !recovering {
		if err := appendPurged(s.dir, purgedRecord{Purge: &p}); err != nil {
			return 0, fmt.Errorf("archive purge urls: record: %w", err)
		}
		u.mu.Lock()
		u.m[p.ID] = p
		delete(u.done, p.ID)
		u.n.Store(int32(len(u.m)))
		u.mu.Unlock()
	}
	for i := range s.keyLocks {
		s.keyLocks[i].Lock()
		defer s.keyLocks[i].Unlock()
	}
	// Counted before the key locks are let go (deferred after them), once
	// the removal is committed: a crawl state read before it is no
	// longer proof of a version (TouchState).
	defer s.purges.Add(1)
	victims, err := s.versionsCovered(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("archive purge urls: %w", err)
	}
	segs := map[uint32]bool{}
	if len(victims) > 0 {
		for _, vc := range victims {
			ref, err := parseSegment(vc.v.File)
			if err != nil {
				return 0, fmt.Errorf("archive purge urls: %w", err)
			}
			segs[ref.id] = true
		}
		s.mu.Lock()
		g, err := s.removeLocked(victims)
		s.mu.Unlock()
		if err != nil {
			return 0, fmt.Errorf("archive purge urls: %w", err)
		}
		<-g.done
		if g.err != nil {
			return 0, fmt.Errorf("archive purge urls: %w", g.err)
		}
	}
	if recovering {
		segs = nil // every segment with dead bytes
	}
	if len(victims) > 0 || recovering {
		if _, err := s.compactOnline(ctx, segs); err != nil {
			return 0, fmt.Errorf("archive purge urls: compact: %w", err)
		}
	}
	if err := appendPurged(s.dir, purgedRecord{Done: p.ID}); err != nil {
		return 0, fmt.Errorf("archive purge urls: record done: %w", err)
	}
	u.mu.Lock()
	u.done[p.ID] = true
	u.mu.Unlock()
	s.log.Info("purged urls", "id", p.ID, "surt", p.SURT, "exact", p.Exact, "versions", len(victims))
	return len(victims), nil
}

// Unpurge withdraws the URL purge id: captures it covered are no longer
// refused. What it removed does not come back. Unknown ids are ignored.
func (s *Store) Unpurge(id string) error {
	u := &s.urlp
	u.run.Lock()
	defer u.run.Unlock()
	u.mu.Lock()
	_, ok := u.m[id]
	u.mu.Unlock()
	if !ok {
		return nil
	}
	if err := appendPurged(s.dir, purgedRecord{Revoked: id}); err != nil {
		return fmt.Errorf("archive unpurge: %w", err)
	}
	u.mu.Lock()
	delete(u.m, id)
	delete(u.done, id)
	u.n.Store(int32(len(u.m)))
	u.mu.Unlock()
	return nil
}

// versionsCovered lists the stored versions p covers, marking those that
// leave their URL without versions. The caller holds every key lock.
func (s *Store) versionsCovered(ctx context.Context, p URLPurge) ([]victim, error) {
	covered := false // the URL of the version seen
	return s.scanVictims(ctx, func(k, val []byte, sv *storedVersion, first bool) (Version, bool, error) {
		if first {
			covered = p.keyCovers(subjectSurt(sv.URL))
		}
		if !covered || sv.format != formatSegment || !p.holds(sv.Time) {
			return Version{}, false, nil
		}
		v, err := s.decodeVersion(k, val)
		return v, err == nil, err
	})
}
