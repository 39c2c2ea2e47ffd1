package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

var errInjected = errors.New("injected fault")

// faultFS is the operating system's file system with faults: syncs that
// fail, and a crash after a given number of writes and syncs, after which
// every operation fails and crash() drops what was not synced (or keeps
// half of it: a torn write).
type faultFS struct {
	mu        sync.Mutex
	failSync  bool
	crashAt   int // ops (WriteAt, Sync, SyncDir) before the crash; 0 never
	ops       int
	crashed   bool
	files     []*faultFile
	keepTorn  bool
	dirSynced map[string]bool
}

type faultFile struct {
	*os.File
	fs     *faultFS
	synced int64
}

// step counts an operation and reports whether it may run.
func (f *faultFS) step() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return errInjected
	}
	f.ops++
	if f.crashAt > 0 && f.ops >= f.crashAt {
		f.crashed = true
		return errInjected
	}
	return nil
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (segFile, error) {
	if err := f.step(); err != nil {
		return nil, err
	}
	o, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, _ := o.Stat()
	ff := &faultFile{File: o, fs: f, synced: fi.Size()}
	f.mu.Lock()
	f.files = append(f.files, ff)
	f.mu.Unlock()
	return ff, nil
}

func (f *faultFS) Remove(name string) error {
	if err := f.step(); err != nil {
		return err
	}
	return os.Remove(name)
}

func (f *faultFS) Rename(from, to string) error {
	if err := f.step(); err != nil {
		return err
	}
	return os.Rename(from, to)
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.step(); err != nil {
		return err
	}
	return syncDir(dir)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		// A crash in the middle of a write leaves part of it.
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.step(); err != nil {
		return err
	}
	f.fs.mu.Lock()
	fail := f.fs.failSync
	f.fs.mu.Unlock()
	if fail {
		return errInjected
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	f.synced = fi.Size()
	return nil
}

// crash drops what no sync made durable: each file is cut to its synced
// size, or, with keepTorn, halfway through its unsynced bytes.
func (f *faultFS) crash(t *testing.T) {
	t.Helper()
	for _, ff := range f.files {
		fi, err := os.Stat(ff.Name())
		if err != nil {
			continue
		}
		keep := ff.synced
		if f.keepTorn {
			keep += (fi.Size() - ff.synced) / 2
		}
		if keep < fi.Size() {
			must(t, os.Truncate(ff.Name(), keep))
		}
	}
}

// TestSyncFailureFailsStore: a failed segment sync fails the Put and the
// store, which refuses every write until reopened; the failed group's
// version, sums and totals never reach the index, and after reopening
// the store is consistent and writable.
func TestSyncFailureFailsStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ffs := &faultFS{}
	s, err := Open(dir, Options{fs: ffs})
	must(t, err)
	v1, _ := mustPut(t, s, capture("http://a.example/1", t0, "one"))
	before, err := s.RangeSum(ctx, v1.Key, v1.Key)
	must(t, err)
	ffs.failSync = true
	if _, _, err := s.Put(ctx, capture("http://a.example/2", t0, "two")); !errors.Is(err, ErrFailed) || !errors.Is(err, errInjected) {
		t.Fatalf("put with a failing sync: %v, want ErrFailed", err)
	}
	ffs.failSync = false
	if _, _, err := s.Put(ctx, capture("http://a.example/3", t0, "three")); !errors.Is(err, ErrFailed) {
		t.Fatalf("put after a failed sync: %v, want ErrFailed", err)
	}
	if st := s.Stats(); st.Failed == "" || st.Versions != 1 {
		t.Fatalf("stats of a failed store: %+v", st)
	}
	must(t, s.Close())
	s, err = Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if after, _ := s.RangeSum(ctx, v1.Key, v1.Key); after != before {
		t.Fatalf("sums changed by the failed group: %+v, want %+v", after, before)
	}
	if st := s.Stats(); st.Versions != 1 || st.URLs != 1 || st.Bytes != v1.Size {
		t.Fatalf("stats after reopen: %+v", st)
	}
	mustPut(t, s, capture("http://a.example/2", t0, "two"))
	s.Close()
	if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
		t.Fatalf("fsck after reopen: %+v %v", rep, err)
	}
}

// TestCrashBetweenWrites crashes the store's file system after each
// possible number of writes and syncs, drops what was not synced (or
// tears it), reopens: every acknowledged version reads back, Fsck finds
// the store consistent, and the store takes new versions.
func TestCrashBetweenWrites(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ torn, dict bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		torn := c.torn
		for k := 1; k <= 14; k++ {
			t.Run(fmt.Sprintf("torn=%v/dict=%v/op%d", torn, c.dict, k), func(t *testing.T) {
				dir := t.TempDir()
				ffs := &faultFS{crashAt: k, keepTorn: torn}
				s, err := Open(dir, Options{fs: ffs, SegmentSize: 1500})
				must(t, err)
				if c.dict { // each record in a .warc.zst segment of its own
					withDict(t, s)
				}
				var acked []Version
				for i := 0; i < 8; i++ {
					v, _, err := s.Put(ctx, capture(fmt.Sprintf("http://c.example/%d", i), t0, fmt.Sprintf("page %d body", i)))
					if err != nil {
						break
					}
					acked = append(acked, v)
				}
				s.Close()
				ffs.crash(t)
				s, err = Open(dir, Options{})
				must(t, err)
				for _, v := range acked {
					if _, err := s.Read(ctx, v); err != nil {
						t.Fatalf("acknowledged version lost: %v", err)
					}
				}
				if st := s.Stats(); st.Versions != int64(len(acked)) {
					t.Fatalf("%d versions after the crash, %d acknowledged", st.Versions, len(acked))
				}
				mustPut(t, s, capture("http://c.example/after", t0, "after the crash"))
				must(t, s.Close())
				if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
					t.Fatalf("fsck after the crash: %+v %v", rep, err)
				}
			})
		}
	}
}

// FuzzScanSegment feeds arbitrary segment bytes to the scan Reindex and
// Fsck use: it never panics, the records it reports lie inside the file
// in order, and each one decodes.
func FuzzScanSegment(f *testing.F) {
	s := openTest(f, Options{NoSync: true})
	v, _ := mustPut(f, s, capture("http://fuzz.example/", t0, "a page"))
	rec, err := s.ReadFile(context.Background(), v.Entry())
	must(f, err)
	f.Add(rec)
	f.Add(append(append([]byte{}, rec...), rec[:len(rec)/2]...))
	f.Add(append(append([]byte("junk\x1f\x8b\x08"), rec...), rec...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		must(t, os.MkdirAll(dir+"/"+segmentsDir, 0o755))
		must(t, os.WriteFile(dir+"/"+segmentRel(1), data, 0o644))
		st, err := newStore(dir, Options{})
		must(t, err)
		last := int64(0)
		end, _, err := st.scanSegment(segRef{id: 1}, func(off int64, rec []byte, _ *decodedFile) error {
			if off < last || off+int64(len(rec)) > int64(len(data)) {
				t.Fatalf("record at %d+%d out of order or outside %d bytes", off, len(rec), len(data))
			}
			if _, err := decodeMember(rec); err != nil {
				t.Fatalf("reported record does not decode: %v", err)
			}
			last = off + int64(len(rec))
			return nil
		})
		if err != nil || end != last {
			t.Fatalf("scan: end %d, last record end %d, %v", end, last, err)
		}
	})
}
