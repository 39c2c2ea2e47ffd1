package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
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
	Files    int   `json:"files"`    // files examined under objects/
	Versions int   `json:"versions"` // valid version files
	Bytes    int64 `json:"bytes"`    // apparent size of the valid files
	// Corrupt lists files (relative paths) that failed verification or are
	// not version files. Reindex moves them to quarantine/ (same relative
	// path); Fsck leaves them in place.
	Corrupt   []string `json:"corrupt,omitempty"`
	TempFiles int      `json:"tempFiles"` // leftovers of interrupted writes in tmp/
	// Unindexed lists valid files the live index does not know (Fsck).
	Unindexed []string `json:"unindexed,omitempty"`
	// Missing lists files the live index names but that are absent or
	// corrupt (Fsck).
	Missing []string `json:"missing,omitempty"`
	// Mismatched counts other index entries (directory hashes, counters,
	// host entries) that differ between the live and the rebuilt index
	// (Fsck).
	Mismatched int `json:"mismatched"`

	paths []string // valid files, for Fsck without an index
}

// OK reports whether Fsck found the store consistent.
func (r Report) OK() bool {
	return len(r.Corrupt) == 0 && len(r.Unindexed) == 0 && len(r.Missing) == 0 && r.Mismatched == 0
}

// Reindex rebuilds the index of the store in dir from its version files
// alone, moving files that fail verification to dir/quarantine/. Crawl
// states and unchanged checks, which no file records, are copied from the
// old index when it can still be read; without one, each URL's crawl state
// is derived from its newest version (ETag, Last-Modified, digest, time;
// no outlinks) and the checks are lost. The store must not be open.
func Reindex(ctx context.Context, dir string, o Options) (Report, error) {
	s, err := newStore(dir, o, true)
	if err != nil {
		return Report{}, fmt.Errorf("archive reindex: %w", err)
	}
	live := filepath.Join(dir, "index")
	old, err := openOld(live)
	if err != nil {
		return Report{}, fmt.Errorf("archive reindex: %w", err)
	}
	if old != nil {
		defer old.Close()
	}
	dst := filepath.Join(dir, "index.rebuild")
	rep, err := s.build(ctx, dst, old, true)
	if err != nil {
		os.RemoveAll(dst)
		return rep, fmt.Errorf("archive reindex: %w", err)
	}
	if old != nil {
		old.Close()
	}
	trash := filepath.Join(dir, "index.old")
	os.RemoveAll(trash)
	if err := os.Rename(live, trash); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("archive reindex: %w", err)
	}
	if err := os.Rename(dst, live); err != nil {
		return rep, fmt.Errorf("archive reindex: %w", err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return rep, fmt.Errorf("archive reindex: %w", err)
	}
	s.log.Info("reindexed", "versions", rep.Versions, "bytes", rep.Bytes, "corrupt", len(rep.Corrupt))
	return rep, nil
}

// Fsck verifies every version file of the store in dir and compares the
// index the files imply with the live index, changing nothing. The store
// must not be open.
func Fsck(ctx context.Context, dir string, o Options) (Report, error) {
	s, err := newStore(dir, o, false)
	if err != nil {
		return Report{}, fmt.Errorf("archive fsck: %w", err)
	}
	old, err := openOld(filepath.Join(dir, "index"))
	if err != nil {
		return Report{}, fmt.Errorf("archive fsck: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "fsck-")
	if err != nil {
		return Report{}, fmt.Errorf("archive fsck: %w", err)
	}
	defer os.RemoveAll(tmp)
	rep, err := s.build(ctx, filepath.Join(tmp, "index"), nil, false)
	if err != nil {
		if old != nil {
			old.Close()
		}
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	if old == nil {
		rep.Unindexed = slices.Clone(rep.paths)
		return rep, nil
	}
	defer old.Close()
	rebuilt, err := leveldb.OpenFile(filepath.Join(tmp, "index"), &opt.Options{ErrorIfMissing: true})
	if err != nil {
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	defer rebuilt.Close()
	if err := compareIndexes(old, rebuilt, &rep); err != nil {
		return rep, fmt.Errorf("archive fsck: %w", err)
	}
	return rep, nil
}

// openOld opens an existing index for reading its crawl states; it returns
// nil, nil if there is none or it cannot be recovered.
func openOld(path string) (*leveldb.DB, error) {
	db, err := leveldb.OpenFile(path, &opt.Options{ErrorIfMissing: true})
	if ldberrors.IsCorrupted(err) {
		db, err = leveldb.RecoverFile(path, nil)
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

// rebuildState accumulates what the files imply while build walks them.
type rebuildState struct {
	leaf  map[[2]byte]DirSum
	level [256]DirSum
	root  DirSum
	ctr   counters
}

// build walks objects/ and writes the implied index to a new goleveldb at
// dst, copying crawl states and checks from old if non-nil. With
// quarantine set, corrupt files are moved out of objects/.
func (s *Store) build(ctx context.Context, dst string, old *leveldb.DB, quarantine bool) (Report, error) {
	var rep Report
	if ents, err := os.ReadDir(filepath.Join(s.dir, "tmp")); err == nil {
		rep.TempFiles = len(ents)
	}
	if err := os.RemoveAll(dst); err != nil {
		return rep, err
	}
	db, err := leveldb.OpenFile(dst, nil)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	st := rebuildState{leaf: make(map[[2]byte]DirSum)}
	root := filepath.Join(s.dir, objectsDir)
	l1, err := readDirNames(root)
	if err != nil {
		return rep, err
	}
	for _, a := range l1 {
		l2, err := readDirNames(filepath.Join(root, a))
		if err != nil {
			return rep, err
		}
		for _, b := range l2 {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if err := s.buildLeaf(db, path.Join(objectsDir, a, b), &st, &rep, quarantine, old == nil && quarantine); err != nil {
				return rep, err
			}
		}
	}
	var batch leveldb.Batch
	for p, d := range st.leaf {
		batch.Put(hashKey(LeafLevel, p[:]), d.encode())
	}
	for i, d := range st.level {
		if d.Count > 0 {
			batch.Put(hashKey(1, []byte{byte(i)}), d.encode())
		}
	}
	if st.root.Count > 0 {
		batch.Put(hashKey(RootLevel, nil), st.root.encode())
		batch.Put(metaStatsKey, st.ctr.encode())
	}
	if old != nil {
		for _, p := range []byte{pState, pTouch} {
			it := old.NewIterator(util.BytesPrefix([]byte{p}), nil)
			for it.Next() {
				batch.Put(slices.Clone(it.Key()), slices.Clone(it.Value()))
			}
			it.Release()
			if err := it.Error(); err != nil {
				return rep, err
			}
		}
	}
	return rep, db.Write(&batch, &opt.WriteOptions{Sync: true})
}

// readDirNames returns the sorted names in dir; non-directories and
// missing dirs yield nothing.
func readDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// buildLeaf indexes the files of one leaf directory (rel "objects/ab/cd").
// With derive set it also writes the crawl state the newest version of
// each URL implies.
func (s *Store) buildLeaf(db *leveldb.DB, rel string, st *rebuildState, rep *Report, quarantine, derive bool) error {
	ents, err := os.ReadDir(filepath.Join(s.dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	var batch leveldb.Batch
	keys := make(map[id.ID]bool)
	seen := make(map[string]bool)
	newest := make(map[id.ID]stateRecord)
	for _, de := range ents {
		p := path.Join(rel, de.Name())
		rep.Files++
		v, e, h, size, deferred, err := s.verifyFile(p)
		if err == nil && seen[string(versionKey(v.Key, v.Time, v.Digest))] {
			err = fmt.Errorf("%w: duplicate of another file's version", ErrCorrupt)
		}
		if err != nil {
			s.log.Warn("corrupt version file", "file", p, "err", err)
			rep.Corrupt = append(rep.Corrupt, p)
			if quarantine {
				if err := s.quarantine(p); err != nil {
					return err
				}
			}
			continue
		}
		vk := versionKey(v.Key, v.Time, v.Digest)
		seen[string(vk)] = true
		batch.Put(vk, encodeVersion(v, e.Seq))
		batch.Put(hostKey(hostOf(v.URL), v.URL), v.Key[:])
		if deferred {
			batch.Put(deferredKey(e), deferredValue(size))
		}
		if !keys[v.Key] {
			keys[v.Key] = true
			st.ctr.urls++
		}
		st.ctr.versions++
		st.ctr.bytes += size
		st.ctr.payload += v.Length
		es := entrySum(e)
		leaf := st.leaf[[2]byte{e.Key[0], e.Key[1]}]
		leaf.add(es)
		st.leaf[[2]byte{e.Key[0], e.Key[1]}] = leaf
		st.level[e.Key[0]].add(es)
		st.root.add(es)
		rep.Versions++
		rep.Bytes += size
		rep.paths = append(rep.paths, p)
		if derive {
			if n, ok := newest[v.Key]; !ok || n.State.Checked.Before(v.Time) {
				newest[v.Key] = derivedState(v, h)
			}
		}
	}
	for k, rec := range newest {
		val, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		batch.Put(stateKey(k), val)
	}
	return db.Write(&batch, nil)
}

// verifyFile reads and checks one version file, returning its version,
// entry, HTTP header, size and whether its compression is deferred.
func (s *Store) verifyFile(rel string) (Version, Entry, http.Header, int64, bool, error) {
	e, err := parsePath(rel)
	if err != nil {
		return Version{}, e, nil, 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	data, err := s.readRaw(rel)
	if err != nil {
		return Version{}, e, nil, 0, false, err
	}
	f, err := decodeMember(data)
	if err == nil {
		err = checkEntry(e, f, "")
	}
	if err != nil {
		return Version{}, e, nil, 0, false, err
	}
	c := &f.capture
	return Version{
		URL: c.URL, Key: e.Key, Digest: e.Digest, Day: e.Day, Time: c.Time, Status: c.Status,
		ContentType: contentType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), File: rel,
	}, e, c.Header, int64(len(data)), f.deferred, nil
}

// derivedState is the crawl state a version file implies when no index
// remembers better: validators and digest of the newest version. Outlinks
// stay empty, so the next crawl forwards all links of the page once.
func derivedState(v Version, h http.Header) stateRecord {
	return stateRecord{URL: v.URL, State: CrawlState{
		ETag: h.Get("Etag"), LastModified: h.Get("Last-Modified"), Digest: v.Digest, Checked: v.Time,
	}}
}

// quarantine moves a bad file out of objects/ without deleting it.
func (s *Store) quarantine(rel string) error {
	dst := filepath.Join(s.dir, "quarantine", filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(s.dir, filepath.FromSlash(rel)), dst)
}

// compareIndexes merges the live and rebuilt indexes in key order and
// records their differences in rep. Crawl states and checks are skipped:
// no file records them.
func compareIndexes(live, rebuilt *leveldb.DB, rep *Report) error {
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
				v, err := decodeVersion(a.Key(), a.Value())
				if err != nil {
					return err
				}
				rep.Missing = append(rep.Missing, v.File)
			} else {
				rep.Mismatched++
			}
			okA = nextDerived(a)
		case c > 0: // only in the files
			if b.Key()[0] == pVersion {
				v, err := decodeVersion(b.Key(), b.Value())
				if err != nil {
					return err
				}
				rep.Unindexed = append(rep.Unindexed, v.File)
			} else {
				rep.Mismatched++
			}
			okB = nextDerived(b)
		default:
			if !bytes.Equal(a.Value(), b.Value()) {
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

// nextDerived advances it to the next key that the files determine.
func nextDerived(it iterator.Iterator) bool {
	for it.Next() {
		if k := it.Key(); len(k) > 0 && k[0] != pState && k[0] != pTouch && !bytes.Equal(k, syncKey) {
			return true
		}
	}
	return false
}
