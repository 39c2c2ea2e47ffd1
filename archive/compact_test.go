package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// purgedStore fills dir with 12 versions signed by two peers, in segments
// of about three records, and purges one peer's; it returns the kept
// versions, the URLs of the purged ones and the options to open it with.
func purgedStore(t *testing.T, dir string, dict bool) (kept []Version, purged []string, o Options) {
	t.Helper()
	ctx := context.Background()
	good, bad := newEdSigner(6), newEdSigner(5)
	o = Options{Verifier: edVerifier{}, SegmentSize: 1200}
	if dict { // room for the dictionary frame too
		o.SegmentSize += int64(len(testDictFrame()))
	}
	s, err := Open(dir, o)
	must(t, err)
	var zd *zdict
	if dict {
		zd = withDict(t, s)
	}
	for i := range 12 {
		signer := good
		// Segments hold records 0-2, 3-5, ...: 3-5 are all purged (the
		// segment goes), the others lose one or two of three.
		if i%3 == 0 || (i >= 3 && i < 6) {
			signer = bad
		}
		c := capture(fmt.Sprintf("http://example.org/p%d", i), t0, fmt.Sprintf("page %d %0400d", i, i))
		name, data := putFile(t, signer, c)
		if zd != nil { // sent as a peer with the same dictionary sends it
			data = asStored(t, zd, data)
		}
		v, _, err := s.Import(ctx, name, data)
		must(t, err)
		if signer == bad {
			purged = append(purged, c.URL)
		} else {
			kept = append(kept, v)
		}
	}
	if n, err := s.PurgePeer(ctx, bad.Peer()); err != nil || n != len(purged) {
		t.Fatalf("purge: %d %v", n, err)
	}
	must(t, s.Close())
	return kept, purged, o
}

// checkCompacted opens dir and checks that the kept versions read back
// (digests verified), the purged ones are gone, sums and totals are
// those of the kept versions, and Fsck agrees.
func checkCompacted(t *testing.T, dir string, kept []Version, purged []string, o Options, sum DirSum, fsck bool) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(dir, o)
	must(t, err)
	for _, v := range kept {
		got, _, err := s.Get(ctx, v.URL, t0)
		if err != nil || got.Entry() != v.Entry() {
			t.Fatalf("kept version %s: %+v %v", v.URL, got, err)
		}
	}
	for _, u := range purged {
		if _, _, err := s.Get(ctx, u, t0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("purged %s: %v", u, err)
		}
	}
	if got, err := s.RangeSum(ctx, id.ID{}, id.ID{}); err != nil || got != sum {
		t.Fatalf("range sum %+v %v, want %+v", got, err, sum)
	}
	if st := s.Stats(); st.Versions != int64(len(kept)) {
		t.Fatalf("%d versions, want %d", st.Versions, len(kept))
	}
	must(t, s.Close())
	if !fsck {
		return
	}
	if rep, err := Fsck(ctx, dir, o); err != nil || !rep.OK() {
		t.Fatalf("fsck: %+v %v", rep, err)
	}
}

func rangeSum(t *testing.T, dir string, o Options) DirSum {
	t.Helper()
	s, err := Open(dir, o)
	must(t, err)
	defer s.Close()
	sum, err := s.RangeSum(context.Background(), id.ID{}, id.ID{})
	must(t, err)
	return sum
}

// TestCompact: after a purge, Compact rewrites the segments that lost
// records, removes the one left empty, and the store holds exactly the
// kept versions in fewer bytes; a second Compact finds nothing to do.
func TestCompact(t *testing.T) {
	for _, dict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dict=%v", dict), func(t *testing.T) { testCompact(t, dict) })
	}
}

func testCompact(t *testing.T, dict bool) {
	ctx := context.Background()
	dir := t.TempDir()
	kept, purged, o := purgedStore(t, dir, dict)
	sum := rangeSum(t, dir, o)
	before := duBytes(t, filepath.Join(dir, segmentsDir))
	rep, err := Compact(ctx, dir, o, CompactOptions{MinDead: 0.1})
	must(t, err)
	if rep.Removed != 1 || rep.Rewritten < 3 || rep.After >= rep.Before {
		t.Fatalf("report %+v: want segments rewritten, 1 removed, fewer bytes", rep)
	}
	if after := duBytes(t, filepath.Join(dir, segmentsDir)); after >= before {
		t.Fatalf("segments take %d bytes after compaction, %d before", after, before)
	}
	ents, err := os.ReadDir(filepath.Join(dir, segmentsDir))
	must(t, err)
	var size int64
	for _, e := range ents {
		if filepath.Ext(e.Name()) == compactExt {
			t.Fatalf("left %s behind", e.Name())
		}
		fi, err := e.Info()
		must(t, err)
		size += fi.Size()
		if r, err := parseSegment(e.Name()); err == nil && r.zst {
			raw, frame, err := readDictFrame(io.NewSectionReader(mustOpen(t, filepath.Join(dir, segmentsDir, e.Name())), 0, fi.Size()), fi.Size())
			if err != nil || len(raw) == 0 {
				t.Fatalf("%s: dictionary frame: %v", e.Name(), err)
			}
			size -= int64(len(frame))
		}
	}
	if _, zst := segmentFiles(t, dir); (zst > 0) != dict {
		t.Fatalf("%d .warc.zst segments, dictionary %v", zst, dict)
	}
	var live int64
	for _, v := range kept {
		live += v.Size
	}
	if size != live {
		t.Fatalf("segments hold %d bytes after compaction, the kept records %d", size, live)
	}
	checkCompacted(t, dir, kept, purged, o, sum, true)
	rep, err = Compact(ctx, dir, o, CompactOptions{MinDead: 0.1})
	if err != nil || rep.Rewritten+rep.Removed != 0 {
		t.Fatalf("second compaction: %+v %v", rep, err)
	}
	if _, err := Compact(ctx, dir, o, CompactOptions{MinDead: 2}); err == nil {
		t.Fatal("compaction with a dead share of 2 accepted")
	}
	s, err := Open(dir, o)
	must(t, err)
	mustPut(t, s, capture("http://example.org/after", t0, "after compaction"))
	must(t, s.Close())
	if rep, err := Fsck(ctx, dir, o); err != nil || !rep.OK() {
		t.Fatalf("fsck after a put into the compacted store: %+v %v", rep, err)
	}
}

// TestCompactCrash crashes the file system after each possible number of
// writes, syncs, renames and removals of a compaction, drops what was not
// synced (or tears it), and reopens: every kept version reads back,
// nothing purged returns, Fsck finds the store consistent, and a second
// compaction completes.
func TestCompactCrash(t *testing.T) {
	for _, dict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dict=%v", dict), func(t *testing.T) { testCompactCrash(t, dict) })
	}
}

func testCompactCrash(t *testing.T, dict bool) {
	ctx := context.Background()
	tmpl := t.TempDir()
	kept, purged, o := purgedStore(t, tmpl, dict)
	sum := rangeSum(t, tmpl, o)
	// A run without a crash counts the operations.
	count := &faultFS{}
	{
		dir := copyDir(t, tmpl)
		co := o
		co.fs = count
		_, err := Compact(ctx, dir, co, CompactOptions{MinDead: 0.1})
		must(t, err)
	}
	if count.ops < 10 {
		t.Fatalf("a compaction took only %d operations", count.ops)
	}
	for k := 1; k <= count.ops; k++ {
		torn := k%2 == 0 // half the crashes leave half the unsynced bytes
		t.Run(fmt.Sprintf("torn=%v/op%d", torn, k), func(t *testing.T) {
			dir := copyDir(t, tmpl)
			ffs := &faultFS{crashAt: k, keepTorn: torn}
			co := o
			co.fs = ffs
			if _, err := Compact(ctx, dir, co, CompactOptions{MinDead: 0.1}); err == nil {
				t.Fatalf("compaction succeeded through a crash at operation %d", k)
			}
			ffs.crash(t)
			checkCompacted(t, dir, kept, purged, o, sum, true)
			if _, err := Compact(ctx, dir, o, CompactOptions{MinDead: 0.1}); err != nil {
				t.Fatalf("compaction after the crash: %v", err)
			}
			checkCompacted(t, dir, kept, purged, o, sum, false)
		})
	}
}

// mustOpen opens path for reading until the test ends.
func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// copyDir copies the directory tree src to a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "store")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dst
}
