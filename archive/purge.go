package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/herod-archive/herod/internal/id"
)

// PurgeReport is what Purge did.
type PurgeReport struct {
	Peer   string   `json:"peer"`
	Files  int      `json:"files"`  // version files examined
	Purged []string `json:"purged"` // files moved to purged/ (relative paths)
	Index  Report   `json:"index"`  // the rebuild of the index that followed
}

// Purge removes from the store in dir every version signed by peer and
// refuses that peer's records from then on: the peer is added to the
// store's refused-peers file first (Import refuses its records even if
// Purge is interrupted), each of its version files is moved to
// dir/purged/ (same relative path: kept for inspection, never served or
// replicated), the crawl states of its URLs are dropped (they may name
// its payloads), and the index is rebuilt from the remaining files
// (Reindex), which recomputes the directory hashes that replication
// compares. The store must not be open. Replicas that hold the same files
// keep them until their operators purge the peer too.
func Purge(ctx context.Context, dir, peer string, o Options) (PurgeReport, error) {
	rep := PurgeReport{Peer: peer}
	if peer == "" {
		return rep, errors.New("archive purge: no peer")
	}
	s, err := newStore(dir, o, false)
	if err != nil {
		return rep, fmt.Errorf("archive purge: %w", err)
	}
	if err := addRefused(dir, peer); err != nil {
		return rep, fmt.Errorf("archive purge: %w", err)
	}
	keys := map[id.ID]bool{}
	root := filepath.Join(dir, objectsDir)
	l1, err := readDirNames(root)
	if err != nil {
		return rep, fmt.Errorf("archive purge: %w", err)
	}
	for _, a := range l1 {
		l2, err := readDirNames(filepath.Join(root, a))
		if err != nil {
			return rep, fmt.Errorf("archive purge: %w", err)
		}
		for _, b := range l2 {
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("archive purge: %w", err)
			}
			leaf := path.Join(objectsDir, a, b)
			ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(leaf)))
			if err != nil {
				return rep, fmt.Errorf("archive purge: %w", err)
			}
			for _, de := range ents {
				rel := path.Join(leaf, de.Name())
				rep.Files++
				data, err := s.readRaw(rel)
				if err != nil {
					return rep, fmt.Errorf("archive purge: %w", err)
				}
				f, err := decodeMember(data)
				if err != nil || f.capture.Peer != peer {
					continue // not the peer's (a corrupt file is Reindex's to quarantine)
				}
				if err := s.moveTo("purged", rel); err != nil {
					return rep, fmt.Errorf("archive purge: %w", err)
				}
				keys[id.OfString(f.capture.URL)] = true
				rep.Purged = append(rep.Purged, rel)
			}
		}
	}
	if err := dropStates(filepath.Join(dir, "index"), keys); err != nil {
		return rep, fmt.Errorf("archive purge: %w", err)
	}
	if rep.Index, err = Reindex(ctx, dir, o); err != nil {
		return rep, fmt.Errorf("archive purge: %w", err)
	}
	s.log.Info("purged a peer's versions", "peer", peer, "files", len(rep.Purged))
	return rep, nil
}

// moveTo moves the file rel out of objects/ to dir/<to>/rel.
func (s *Store) moveTo(to, rel string) error {
	dst := filepath.Join(s.dir, to, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(s.dir, filepath.FromSlash(rel)), dst)
}

// dropStates deletes the crawl states of keys from the index at dir, if
// there is one.
func dropStates(dir string, keys map[id.ID]bool) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		return err
	}
	var b leveldb.Batch
	for k := range keys {
		b.Delete(stateKey(k))
	}
	if err := db.Write(&b, nil); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}
