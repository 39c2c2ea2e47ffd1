package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Migration from the one-file layout (objects/ab/cd/<name>.warc.gz, one
// version per file, index values of format 1). Open runs it whenever
// dir/objects exists; `herod fsck` opens the store, so it migrates too.
// Every step is idempotent, so a migration a crash interrupted resumes at
// the next Open:
//
//  1. The versions the index names are moved in batches: each file's bytes
//     (verified) are appended unchanged to the active segment, the
//     segments are synced, the batch rewrites the versions' index values
//     to the segment format (with their signing peer) in one synced write,
//     and only then are the files removed. Names, directory sums and
//     totals do not change: a record is its file's bytes.
//  2. Files the index did not name (a crash of the old layout between the
//     rename and the index write, or a lost index) are imported like a
//     replica's records but without the signature check (they are this
//     node's own), then removed; those that fail verification go to
//     quarantine/.
//  3. The deferred-compression list is dropped (a deferred file is a
//     valid gzip member; it is kept as it is), then objects/ and tmp/.
//
// Versions whose file is missing or corrupt are taken out of the index
// (the file, if any, is moved to quarantine/) and logged.

// migrateBatch is how many versions one synced index write moves.
const migrateBatch = 512

// migrate moves the one-file layout into segments; without objects/ it
// does nothing.
func (s *Store) migrate(ctx context.Context) error {
	objects := filepath.Join(s.dir, objectsDir)
	if !exists(objects) {
		return nil
	}
	s.log.Warn("migrating the one-file layout into segments", "dir", s.dir)
	moved, bad := 0, []victim(nil)
	for {
		n, b, err := s.migrateIndexed(ctx)
		if err != nil {
			return err
		}
		moved += n
		bad = append(bad, b...)
		if n+len(b) < migrateBatch {
			break
		}
	}
	if len(bad) > 0 {
		if err := s.markLast(bad); err != nil {
			return err
		}
		s.mu.Lock()
		g, err := s.removeLocked(bad)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if <-g.done; g.err != nil {
			return g.err
		}
	}
	imported, err := s.migrateLoose(ctx, objects)
	if err != nil {
		return err
	}
	var b leveldb.Batch
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDeferred}), nil)
	for it.Next() {
		b.Delete(append([]byte(nil), it.Key()...))
	}
	it.Release()
	if err := it.Error(); err != nil {
		return err
	}
	if err := s.db.Write(&b, s.wo); err != nil {
		return err
	}
	for _, d := range []string{objects, filepath.Join(s.dir, "tmp")} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.log.Warn("migrated the one-file layout", "moved", moved, "imported", imported, "dropped", len(bad))
	return nil
}

// migrateIndexed moves up to migrateBatch versions of format 1 and
// returns how many it moved and the versions it could not (missing or
// corrupt files, quarantined).
func (s *Store) migrateIndexed(ctx context.Context) (int, []victim, error) {
	var todo []storedVersion
	var bad []victim
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion}), nil)
	for it.Next() && len(todo)+len(bad) < migrateBatch {
		if it.Value()[0] != formatFile {
			continue
		}
		sv, err := decodeStored(it.Key(), it.Value())
		if err != nil {
			it.Release()
			return 0, nil, err
		}
		todo = append(todo, sv)
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, nil, err
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	var b leveldb.Batch
	ends := map[*segment]int64{}
	var done []string
	var raw bytes.Buffer
	moved := 0
	for _, sv := range todo {
		rel := sv.Entry().Path()
		path := filepath.Join(s.dir, filepath.FromSlash(rel))
		data, err := os.ReadFile(path)
		var f *decodedFile
		if err == nil {
			raw.Reset()
			if f, err = decodeMemberTo(data, &raw); err == nil {
				err = checkEntry(sv.Entry(), f, sv.URL)
			}
		}
		if err != nil {
			s.log.Error("migrate: version file missing or corrupt; taken out of the index", "file", rel, "err", err)
			if !errors.Is(err, fs.ErrNotExist) {
				if qerr := s.quarantineFile(rel); qerr != nil {
					return 0, nil, qerr
				}
			}
			v := sv.Version
			v.Size = int64(len(data))
			bad = append(bad, victim{v: v, last: false})
			continue
		}
		rec := &record{plain: raw.Bytes(), data: data}
		seg, off, err := s.appendRecord(rec)
		if err != nil {
			return 0, nil, err
		}
		v := sv.Version
		v.Peer, v.Offset, v.Size = f.capture.Peer, off, int64(len(rec.data))
		v.Browser = f.capture.Browser
		b.Put(versionKey(v.Key, v.Time, v.Digest), encodeVersion(v, seg.id, s.peers.number(v.Peer, &b)))
		ends[seg] = max(ends[seg], off+v.Size)
		done = append(done, path)
		moved++
	}
	for seg, end := range ends {
		if !s.noSync {
			if err := seg.f.Sync(); err != nil {
				return 0, nil, s.fail(fmt.Errorf("sync segment %s: %w", seg.name(), err))
			}
		}
		b.Put(segEndKey(seg.id), binary.AppendUvarint(nil, uint64(end)))
	}
	if b.Len() > 0 {
		if err := s.db.Write(&b, s.wo); err != nil {
			return 0, nil, s.fail(fmt.Errorf("index write: %w", err))
		}
		for seg, end := range ends {
			seg.durable = max(seg.durable, end)
		}
	}
	for _, p := range done {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, nil, err
		}
	}
	return moved, bad, nil
}

// markLast marks the victims that leave their URL without versions.
func (s *Store) markLast(victims []victim) error {
	per := map[string]int{}
	for _, vc := range victims {
		per[string(vc.v.Key[:])]++
	}
	for i, vc := range victims {
		it := s.db.NewIterator(util.BytesPrefix(versionPrefix(vc.v.Key)), nil)
		n := 0
		for it.Next() {
			n++
		}
		it.Release()
		if err := it.Error(); err != nil {
			return err
		}
		victims[i].last = n == per[string(vc.v.Key[:])]
	}
	return nil
}

// migrateLoose imports the files left under objects/ (moved ones are
// gone already) and removes them; it returns how many were new.
func (s *Store) migrateLoose(ctx context.Context, objects string) (int, error) {
	n := 0
	err := filepath.WalkDir(objects, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, added, err := s.importRecord(ctx, d.Name(), data, false, nil)
		switch {
		case err == nil:
			if added {
				n++
			}
			return os.Remove(path)
		case errors.Is(err, ErrCorrupt) || errors.Is(err, ErrBadCapture):
			s.log.Error("migrate: unindexed file refused; quarantined", "file", rel, "err", err)
			return s.quarantineFile(filepath.ToSlash(rel))
		default:
			return err
		}
	})
	return n, err
}

// quarantineFile moves the file rel (relative to the store root) to
// dir/quarantine/rel.
func (s *Store) quarantineFile(rel string) error {
	dst := filepath.Join(s.dir, "quarantine", filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(s.dir, filepath.FromSlash(rel)), dst)
}
