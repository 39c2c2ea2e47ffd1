package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syndtr/goleveldb/leveldb/util"
)

// Deferred compression. Compressing a version file at the store's level
// (6 by default) is most of what a Put costs in CPU (~130 of ~450 µs for a
// 15 KB page). When the CPU gate is behind — Puts and other page
// processing are waiting for a worker — Put writes the record in stored
// (uncompressed) deflate blocks, which costs a copy (~1 µs for 13 KB,
// against ~23 µs for the Huffman-only coding stop 12 used and ~130 µs at
// level 6; docs/crawl.md) and takes ~2.3 times the bytes of level 6 until
// the file is recompressed (a version that would not fit the quota so is
// compressed at once instead, encodeAndPlace), marks
// the file as deferred in its gzip header and lists it in the index; when
// the store has written no deferred file for Options.RecompressAfter and
// nothing waits for the gate, a background loop recompresses the listed
// files at the store's level, on the gate's low-priority workers, and
// puts each in place of its deferred one.
//
// A deferred file is a complete, valid version file: the same record in
// one gzip member, readable by any gzip reader (the mark is an extra
// field, RFC 1952 2.3.1.1, which readers skip). Recompression replaces
// the file's bytes, never its content: the new member must decode to a
// record that passes every check against the file's name before it is
// written to dir/tmp, made durable (the index group's syncfs, or an fsync
// of its own where there is none, even with NoSync) and renamed over the
// old one by its index group, which also drops the file from the list and
// corrects the byte totals. A crash between the rename and the group
// leaves the list naming a file that is no longer marked: the next pass
// drops it and corrects the totals from the size the list recorded. Reindex lists the marked files it
// finds, and Import lists marked files received from replicas, so the
// list is a function of the files like the rest of the index.

// deferredExtra is the gzip extra field of a deferred file: one subfield
// with ID "Hd" (herod, deferred) and no data.
var deferredExtra = []byte{'H', 'd', 0, 0}

// isDeferred reports whether a gzip extra field holds the deferred mark.
func isDeferred(extra []byte) bool {
	for len(extra) >= 4 {
		n := int(extra[2]) | int(extra[3])<<8
		if len(extra) < 4+n {
			return false
		}
		if extra[0] == 'H' && extra[1] == 'd' {
			return true
		}
		extra = extra[4+n:]
	}
	return false
}

// DefaultRecompressAfter is Options.RecompressAfter when zero.
const DefaultRecompressAfter = 2 * time.Second

// recompressBatch is how many files one background pass recompresses
// before it looks again at whether the store is quiet.
const recompressBatch = 32

// deferredKey lists the version file of e as awaiting recompression.
func deferredKey(e Entry) []byte {
	return append([]byte{pDeferred}, e.Name()...)
}

// deferredState is the store's side of deferred compression.
type deferredState struct {
	mu       sync.Mutex    // serializes Recompress
	n        atomic.Int64  // files listed, as committed
	lastFast atomic.Int64  // UnixNano of the last deferred Put
	wake     chan struct{} // a token when a group listed files
	stop     chan struct{} // closed by Close
	done     chan struct{} // closed when the loop has exited
}

// shouldDefer reports whether a Put encoding now should defer its
// compression: unless Options.CompressNow, when the processing is behind
// (s.busy: callers are waiting for a gate worker).
func (s *Store) shouldDefer() bool {
	return !s.compressNow && s.busy()
}

// countDeferred counts the listed files at Open.
func (s *Store) countDeferred() error {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDeferred}), nil)
	defer it.Release()
	var n int64
	for it.Next() {
		n++
	}
	s.rc.n.Store(n)
	return it.Error()
}

// Recompress recompresses up to limit of the files stored with deferred
// compression (all of them if limit <= 0), in file-name order, and
// returns how many it took off the list. Each file is replaced by the
// encoding an immediate Put would have written, once that passed every
// check against the file's name; a file that is missing, corrupt or no
// longer marked (replaced before a crash cut its index group) is taken off
// the list and left as it is (a corrupt one is logged and counted in
// Stats.Corrupt, for Fsck to report). A file that cannot be done now (a
// write error) stays listed and the others go on; the first such error is
// returned. The background loop calls it; a caller may too, for example
// before measuring disk use. Calls are serialized.
func (s *Store) Recompress(ctx context.Context, limit int) (int, error) {
	s.rc.mu.Lock()
	defer s.rc.mu.Unlock()
	if s.closed.Load() {
		return 0, errors.New("archive recompress: store closed")
	}
	type listed struct {
		e    Entry
		size int64 // the deferred file's size when listed
	}
	var (
		todo []listed
		bad  [][]byte // keys that name no version file
	)
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDeferred}), nil)
	for it.Next() && (limit <= 0 || len(todo)+len(bad) < limit) {
		e, err := ParseName(string(it.Key()[1:]))
		size, n := binary.Uvarint(it.Value())
		if err != nil || n <= 0 {
			s.log.Error("bad entry in the list of deferred files; dropped", "key", it.Key())
			bad = append(bad, slices.Clone(it.Key()))
			continue
		}
		todo = append(todo, listed{e, int64(size)})
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("archive recompress: %w", err)
	}
	var (
		groups []*indexGroup
		n      []int // files unlisted by each group
		first  error
	)
	add := func(g *indexGroup) {
		if len(groups) == 0 || groups[len(groups)-1] != g {
			groups, n = append(groups, g), append(n, 0)
		}
		n[len(n)-1]++
	}
	for _, k := range bad {
		g, err := s.unlistKey(k, 0, nil)
		if err != nil {
			first = fmt.Errorf("archive recompress: %w", err)
			break
		}
		add(g)
	}
	for _, l := range todo {
		if first != nil && (ctx.Err() != nil || errors.Is(first, errStoreClosed)) {
			break
		}
		g, err := s.recompressOne(ctx, l.e, l.size)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("archive recompress %s: %w", l.e.Name(), err)
			}
			continue
		}
		add(g)
	}
	done := 0
	for i, g := range groups {
		<-g.done
		if g.err != nil {
			if first == nil {
				first = fmt.Errorf("archive recompress: %w", g.err)
			}
			continue
		}
		done += n[i]
	}
	return done, first
}

// recompressOne recompresses the listed file e, whose size was listed as
// size, and queues its index change; it returns the group to wait for.
func (s *Store) recompressOne(ctx context.Context, e Entry, size int64) (*indexGroup, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := s.readRaw(e.Path())
	if errors.Is(err, ErrNotFound) {
		s.log.Warn("file listed for recompression is missing", "file", e.Path())
		return s.unlistKey(deferredKey(e), 0, nil)
	}
	if err != nil {
		return nil, err
	}
	var (
		mv     *pendingFile
		delta  int64 // change of the file's size, once replaced
		werr   error
		unmark bool // the file stays as it is: only unlist it
	)
	if gerr := s.cpu.Do(ctx, func() {
		raw := bufPool.Get().(*bytes.Buffer)
		raw.Reset()
		defer bufPool.Put(raw)
		f, err := decodeMemberTo(data, raw)
		if err == nil {
			err = checkEntry(e, f, "")
		}
		if err != nil {
			s.corrupt.Add(1)
			s.log.Error("corrupt version file: not recompressed", "file", e.Path(), "err", err)
			unmark = true
			return
		}
		if !f.deferred {
			// Replaced already, and a crash (or a failed group) kept the
			// index from learning it: correct the totals now.
			unmark, delta = true, int64(len(data))-size
			return
		}
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		defer bufPool.Put(buf)
		if werr = s.gz.member(buf, false, func(w io.Writer) error {
			_, err := w.Write(raw.Bytes())
			return err
		}); werr != nil {
			return
		}
		nf, err := decodeMember(buf.Bytes())
		if err == nil {
			err = checkEntry(e, nf, "")
		}
		if err == nil && nf.deferred {
			err = errors.New("recompressed file still marked deferred")
		}
		if err != nil {
			werr = fmt.Errorf("recompressed file fails verification: %w", err)
			return
		}
		delta = int64(buf.Len()) - int64(len(data))
		mv, werr = s.writeReplacement(e.Path(), buf.Bytes())
	}); gerr != nil {
		return nil, gerr
	}
	if werr != nil {
		return nil, werr
	}
	if unmark {
		return s.unlistKey(deferredKey(e), delta, nil)
	}
	return s.unlistKey(deferredKey(e), delta, mv)
}

// writeReplacement writes data to a temporary file that its index group
// renames over the version file rel (commit.go). With group sync the
// group's syncfs makes it durable; otherwise it is fsynced here, even with
// NoSync: it replaces a file that may have been durable for years.
func (s *Store) writeReplacement(rel string, data []byte) (*pendingFile, error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), filepath.Base(rel)+".*")
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	if err == nil && !s.groupSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &pendingFile{tmp: f.Name(), final: filepath.Join(s.dir, filepath.FromSlash(rel)), synced: !s.groupSync}, nil
}

// unlistKey queues, in the group forming, the deletion of the list entry
// key, a change of the byte totals by delta and the rename of mv (if not
// nil) before it.
func (s *Store) unlistKey(key []byte, delta int64, mv *pendingFile) (*indexGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gc.closing || s.gc.stopped == nil {
		if mv != nil {
			os.Remove(mv.tmp)
		}
		return nil, errStoreClosed
	}
	g := s.formingLocked()
	g.b.Delete(key)
	g.deferred--
	if delta != 0 {
		d := counters{bytes: delta}
		g.delta.addCounters(d)
		s.ctr.addCounters(d)
		g.b.Put(metaStatsKey, s.ctr.encode())
	}
	if mv != nil {
		g.files = append(g.files, mv)
	}
	return g, nil
}

// deferredValue is the value of a file's list entry: its size.
func deferredValue(size int64) []byte { return binary.AppendUvarint(nil, uint64(size)) }

// noteDeferred records a deferred Put for the loop's quiet period.
func (s *Store) noteDeferred() { s.rc.lastFast.Store(time.Now().UnixNano()) }

// startRecompressor starts the background loop unless
// Options.RecompressAfter is negative; Close stops it.
func (s *Store) startRecompressor() {
	s.rc.wake = make(chan struct{}, 1)
	s.rc.stop = make(chan struct{})
	s.rc.done = make(chan struct{})
	if s.after < 0 {
		close(s.rc.done)
		return
	}
	if s.rc.n.Load() > 0 {
		s.rc.wake <- struct{}{}
	}
	go s.recompressor()
}

// stopRecompressor stops the loop and waits for it.
func (s *Store) stopRecompressor() {
	if s.rc.stop == nil {
		return
	}
	close(s.rc.stop)
	<-s.rc.done
}

// recompressor recompresses listed files while the store is quiet: no
// deferred Put for s.after and no caller waiting for the gate.
func (s *Store) recompressor() {
	defer close(s.rc.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.rc.stop:
			cancel()
		case <-s.rc.done:
		}
	}()
	for {
		select {
		case <-s.rc.stop:
			return
		case <-s.rc.wake:
		}
		for s.rc.n.Load() > 0 {
			wait := s.after - time.Since(time.Unix(0, s.rc.lastFast.Load()))
			if wait <= 0 && s.busy() {
				wait = s.after / 4
			}
			if wait > 0 {
				select {
				case <-s.rc.stop:
					return
				case <-time.After(wait):
				}
				continue
			}
			n, err := s.Recompress(ctx, recompressBatch)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Error("recompression of deferred files failed; retrying in a minute", "err", err)
				select {
				case <-s.rc.stop:
					return
				case <-time.After(time.Minute):
				}
				continue
			}
			if n == 0 {
				break
			}
		}
	}
}
