package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syndtr/goleveldb/leveldb/util"
)

// Deferred compression. Compressing a version file at the store's level
// (6 by default) is most of what a Put costs in CPU (~130 of ~450 µs for a
// 15 KB page); Huffman-only coding costs a fifth of that and stores ~30%
// more bytes. When the CPU gate is behind — Puts and other page processing
// are waiting for a worker — Put writes the Huffman-only encoding, marks
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
// written to dir/tmp, made durable by its index group (syncfs, or fsync
// where there is none) and renamed over the old one; the group then drops
// the file from the list and corrects the byte totals. A crash between the
// rename and the group leaves the list naming a file that is no longer
// marked, which the next pass drops. Reindex lists the marked files it
// finds, and Import lists marked files received from replicas, so the
// list is a function of the files like the rest of the index.

// deferredExtra is the gzip extra field of a deferred file: one subfield
// with ID "Hd" (herod, deferred) and no data.
var deferredExtra = []byte{'H', 'd', 0, 0}

// isDeferred reports whether a gzip extra field holds the deferred mark.
func isDeferred(extra []byte) bool {
	for len(extra) >= 4 {
		n := int(extra[2]) | int(extra[3])<<8
		if extra[0] == 'H' && extra[1] == 'd' {
			return true
		}
		if len(extra) < 4+n {
			return false
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

// Recompress recompresses up to max of the files stored with deferred
// compression (all of them if max <= 0), oldest listed first by name, and
// returns how many it took off the list. Each file is replaced only by a
// smaller encoding of the same record that passed verification; a file
// that is missing, corrupt or no longer marked is taken off the list and
// left as it is (a corrupt one is logged and counted in Stats.Corrupt,
// for Fsck to report). The background loop calls it; a caller may too,
// for example before measuring disk use. Calls are serialized.
func (s *Store) Recompress(ctx context.Context, max int) (int, error) {
	s.rc.mu.Lock()
	defer s.rc.mu.Unlock()
	if s.closed.Load() {
		return 0, errors.New("archive recompress: store closed")
	}
	var entries []Entry
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDeferred}), nil)
	for it.Next() && (max <= 0 || len(entries) < max) {
		e, err := ParseName(string(it.Key()[1:]))
		if err != nil {
			it.Release()
			return 0, fmt.Errorf("archive recompress: %w: listed name: %v", ErrCorrupt, err)
		}
		entries = append(entries, e)
	}
	it.Release()
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("archive recompress: %w", err)
	}
	var (
		groups []*indexGroup
		n      []int // files unlisted by each group
		err    error
	)
	for _, e := range entries {
		g, rerr := s.recompressOne(ctx, e)
		if rerr != nil {
			err = fmt.Errorf("archive recompress %s: %w", e.Name(), rerr)
			break
		}
		if len(groups) == 0 || groups[len(groups)-1] != g {
			groups, n = append(groups, g), append(n, 0)
		}
		n[len(n)-1]++
	}
	done := 0
	for i, g := range groups {
		<-g.done
		if g.err != nil {
			if err == nil {
				err = fmt.Errorf("archive recompress: %w", g.err)
			}
			continue
		}
		done += n[i]
	}
	return done, err
}

// recompressOne recompresses the listed file e and queues its index
// change; it returns the group to wait for.
func (s *Store) recompressOne(ctx context.Context, e Entry) (*indexGroup, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := s.readRaw(e.Path())
	if errors.Is(err, ErrNotFound) {
		s.log.Warn("file listed for recompression is missing", "file", e.Path())
		return s.unlist(e, 0, 0, nil)
	}
	if err != nil {
		return nil, err
	}
	var (
		mv      *pendingFile
		newSize int64
		keep    bool // leave the file as it is, only unlist it
	)
	var werr error
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
			keep = true
			return
		}
		if !f.deferred {
			keep = true // replaced already; the crash came before its index group
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
		if buf.Len() >= len(data) {
			keep = true // nothing to gain (incompressible payload)
			return
		}
		newSize = int64(buf.Len())
		mv, werr = s.placeFile(e.Path(), buf.Bytes())
	}); gerr != nil {
		return nil, gerr
	}
	if werr != nil {
		return nil, werr
	}
	if keep {
		return s.unlist(e, 0, 0, nil)
	}
	return s.unlist(e, int64(len(data)), newSize, mv)
}

// unlist queues, in the group forming, the removal of e from the list and,
// when the file was replaced (mv, or newSize > 0 without group sync), the
// change of the byte totals from oldSize to newSize.
func (s *Store) unlist(e Entry, oldSize, newSize int64, mv *pendingFile) (*indexGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gc.closing || s.gc.stopped == nil {
		if mv != nil {
			os.Remove(mv.tmp)
		}
		return nil, errStoreClosed
	}
	g := s.formingLocked()
	g.b.Delete(deferredKey(e))
	g.deferred--
	if newSize > 0 {
		d := counters{bytes: newSize - oldSize}
		g.delta.addCounters(d)
		s.ctr.addCounters(d)
		g.b.Put(metaStatsKey, s.ctr.encode())
	}
	if mv != nil {
		g.files = append(g.files, mv)
	}
	return g, nil
}

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
