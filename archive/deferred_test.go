package archive

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/herod-archive/herod/internal/cpugate"
)

// page is a compressible HTML page of about 12 KB, different for each i.
func page(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>page %d</title></head><body>", i)
	for j := 0; b.Len() < 12<<10; j++ {
		fmt.Fprintf(&b, "<p>paragraph %d of page %d: the archive keeps every version of every page</p>\n", j, i*7+j%5)
	}
	return b.String() + "</body></html>"
}

// openDeferring opens a store in dir whose Puts defer their compression
// while busy reports true.
func openDeferring(t *testing.T, dir string, o Options, busy *atomic.Bool) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	s.busy = busy.Load
	t.Cleanup(func() { s.Close() })
	return s
}

// fileOf returns the bytes of v's file and whether it is marked deferred.
func fileOf(t *testing.T, s *Store, v Version) ([]byte, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir(), filepath.FromSlash(v.File)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := decodeMember(data)
	if err != nil {
		t.Fatalf("%s: %v", v.File, err)
	}
	return data, f.deferred
}

// diskBytes sums the sizes of the version files under dir.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(filepath.Join(dir, objectsDir), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeferredCompression(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var busy atomic.Bool
	s := openDeferring(t, dir, Options{RecompressAfter: -1}, &busy)

	// The same captures in a store that never defers: what recompression
	// must produce, byte for byte.
	ref := openTest(t, Options{CompressNow: true})
	ref.busy = func() bool { return true }

	const n = 6
	var vs []Version
	var deferredBytes int64
	for i := range n {
		busy.Store(i != n-1) // the last Put finds the processing keeping up
		c := capture(fmt.Sprintf("http://d.example/%d", i), t0.Add(time.Duration(i)*time.Second), page(i))
		v, _ := mustPut(t, s, c)
		mustPut(t, ref, c)
		data, marked := fileOf(t, s, v)
		if marked != (i != n-1) {
			t.Fatalf("put %d: file marked deferred %v, want %v", i, marked, i != n-1)
		}
		if marked {
			deferredBytes += int64(len(data))
		}
		got, err := s.Read(ctx, v)
		if err != nil || !bytes.Equal(got.Body, c.Body) {
			t.Fatalf("read back a deferred file: %v", err)
		}
		vs = append(vs, v)
	}
	if st := s.Stats(); st.Deferred != n-1 || st.Bytes != diskBytes(t, dir) {
		t.Fatalf("stats %+v: want %d deferred and bytes %d", st, n-1, diskBytes(t, dir))
	}

	// Deferred files are valid version files for any gzip reader (the
	// standard library's here) and concatenate into one WARC stream.
	var all bytes.Buffer
	for _, v := range vs {
		data, _ := fileOf(t, s, v)
		all.Write(data)
	}
	zr, err := stdgzip.NewReader(&all)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil || bytes.Count(raw, []byte("WARC/1.1\r\n")) != n {
		t.Fatalf("standard gzip over the concatenated files: %d records, %v", bytes.Count(raw, []byte("WARC/1.1\r\n")), err)
	}

	// The list survives a reopen, and the index rebuilt from the files
	// (which carry the mark) equals the live one.
	s.Close()
	live := dumpIndex(t, dir)
	if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
		t.Fatalf("fsck with deferred files: %+v, %v", rep, err)
	}
	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	diffIndexes(t, live, dumpIndex(t, dir))
	s = openDeferring(t, dir, Options{RecompressAfter: -1}, &busy)
	defer s.Close()
	if st := s.Stats(); st.Deferred != n-1 {
		t.Fatalf("after reopen: %d deferred, want %d", st.Deferred, n-1)
	}

	done, err := s.Recompress(ctx, 2)
	if err != nil || done != 2 || s.Stats().Deferred != n-3 {
		t.Fatalf("Recompress(2) = %d, %v; %d left", done, err, s.Stats().Deferred)
	}
	if done, err = s.Recompress(ctx, 0); err != nil || done != n-3 {
		t.Fatalf("Recompress(0) = %d, %v", done, err)
	}
	var recompressed int64
	for i, v := range vs {
		data, marked := fileOf(t, s, v)
		want, _ := fileOf(t, ref, v)
		if marked || !bytes.Equal(data, want) {
			t.Fatalf("file %d after recompression: marked %v, %d bytes; want the %d bytes a direct Put writes", i, marked, len(data), len(want))
		}
		if i != n-1 {
			recompressed += int64(len(data))
		}
	}
	if recompressed >= deferredBytes*9/10 {
		t.Fatalf("recompression saved too little: %d -> %d bytes", deferredBytes, recompressed)
	}
	st := s.Stats()
	if st.Deferred != 0 || st.Bytes != diskBytes(t, dir) || st.Versions != n {
		t.Fatalf("stats after recompression %+v, files hold %d bytes", st, diskBytes(t, dir))
	}
	if done, err := s.Recompress(ctx, 0); err != nil || done != 0 {
		t.Fatalf("Recompress with nothing listed = %d, %v", done, err)
	}
	s.Close()
	live = dumpIndex(t, dir)
	for k := range live {
		if k[0] == pDeferred {
			t.Fatalf("index still lists %q", k)
		}
	}
	if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() || rep.Bytes != st.Bytes {
		t.Fatalf("fsck after recompression: %+v, %v", rep, err)
	}
}

// listRaw writes a list entry behind the store's back. The store in dir
// must be closed.
func listRaw(t *testing.T, dir string, key, val []byte) {
	t.Helper()
	db, err := leveldb.OpenFile(filepath.Join(dir, "index"), &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put(key, val, nil); err != nil {
		t.Fatal(err)
	}
}

// listDeferred lists e, of size bytes, for recompression behind the
// store's back, as a crash after a replacement's rename (but before its
// index group) leaves it.
func listDeferred(t *testing.T, dir string, e Entry, size int64) {
	t.Helper()
	listRaw(t, dir, deferredKey(e), deferredValue(size))
}

func TestRecompressUnlistsWhatItCannotImprove(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var busy atomic.Bool
	s := openDeferring(t, dir, Options{RecompressAfter: -1}, &busy)
	plain, _ := mustPut(t, s, capture("http://u.example/plain", t0, page(1)))
	busy.Store(true)
	bad, _ := mustPut(t, s, capture("http://u.example/bad", t0, page(2)))
	s.Close()

	// A listed file that is not marked (as if replaced before a crash,
	// at the same size), one that is corrupt, one that is gone and an
	// entry that names no file.
	ePlain, _ := parsePath(plain.File)
	plainInfo, err := os.Stat(filepath.Join(dir, filepath.FromSlash(plain.File)))
	if err != nil {
		t.Fatal(err)
	}
	listDeferred(t, dir, ePlain, plainInfo.Size())
	gone := Entry{Key: ePlain.Key, Digest: ePlain.Digest, Day: ePlain.Day + 1}
	listDeferred(t, dir, gone, 100)
	listRaw(t, dir, []byte{pDeferred, 'x'}, nil)
	badPath := filepath.Join(dir, filepath.FromSlash(bad.File))
	data, err := os.ReadFile(badPath)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(badPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	plainBefore, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(plain.File)))
	if err != nil {
		t.Fatal(err)
	}

	s = openDeferring(t, dir, Options{RecompressAfter: -1}, &busy)
	defer s.Close()
	if st := s.Stats(); st.Deferred != 4 {
		t.Fatalf("%d listed at open, want 4", st.Deferred)
	}
	bytesBefore := s.Stats().Bytes
	done, err := s.Recompress(ctx, 0)
	if err != nil || done != 4 {
		t.Fatalf("Recompress = %d, %v; want 4 unlisted", done, err)
	}
	st := s.Stats()
	if st.Deferred != 0 || st.Corrupt != 1 || st.Bytes != bytesBefore {
		t.Fatalf("stats %+v: want nothing listed, one corrupt, bytes unchanged (%d)", st, bytesBefore)
	}
	if got, _ := os.ReadFile(badPath); !bytes.Equal(got, data) {
		t.Fatal("a corrupt file was rewritten")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(plain.File))); !bytes.Equal(got, plainBefore) {
		t.Fatal("an unmarked file was rewritten")
	}
}

func TestRecompressInBackground(t *testing.T) {
	dir := t.TempDir()
	var busy atomic.Bool
	busy.Store(true)
	s := openDeferring(t, dir, Options{RecompressAfter: 20 * time.Millisecond}, &busy)
	defer s.Close()
	const n = 5
	for i := range n {
		mustPut(t, s, capture(fmt.Sprintf("http://bg.example/%d", i), t0, page(i)))
	}
	// While the processing stays behind, nothing is recompressed.
	time.Sleep(200 * time.Millisecond)
	if st := s.Stats(); st.Deferred != n {
		t.Fatalf("%d deferred while busy, want %d", st.Deferred, n)
	}
	busy.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Deferred != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d files still deferred 10 s after the store went quiet", s.Stats().Deferred)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Stats(); st.Bytes != diskBytes(t, dir) {
		t.Fatalf("bytes %d, files hold %d", st.Bytes, diskBytes(t, dir))
	}
}

func TestImportListsDeferredFiles(t *testing.T) {
	ctx := context.Background()
	var busy atomic.Bool
	busy.Store(true)
	a := openDeferring(t, t.TempDir(), Options{RecompressAfter: -1}, &busy)
	defer a.Close()
	v, _ := mustPut(t, a, capture("http://imp.example/", t0, page(3)))
	e, _ := parsePath(v.File)
	data, err := a.ReadFile(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	b := openTest(t, Options{RecompressAfter: -1})
	if _, added, err := b.Import(ctx, e.Name(), data); err != nil || !added {
		t.Fatalf("import: %v, %v", added, err)
	}
	if st := b.Stats(); st.Deferred != 1 {
		t.Fatalf("importing a deferred file listed %d, want 1", st.Deferred)
	}
	if done, err := b.Recompress(ctx, 0); err != nil || done != 1 || b.Stats().Bytes >= int64(len(data)) {
		t.Fatalf("Recompress after import = %d, %v; bytes %d of %d", done, err, b.Stats().Bytes, len(data))
	}
}

func TestIsDeferred(t *testing.T) {
	for _, tc := range []struct {
		extra []byte
		want  bool
	}{
		{nil, false},
		{deferredExtra, true},
		{[]byte{'A', 'P', 2, 0, 1, 2, 'H', 'd', 0, 0}, true},
		{[]byte{'A', 'P', 2, 0, 1, 2}, false},
		{[]byte{'A', 'P', 9, 0, 'H', 'd', 0, 0}, false}, // the mark inside another subfield's data
		{[]byte{'H'}, false},
	} {
		if got := isDeferred(tc.extra); got != tc.want {
			t.Errorf("isDeferred(%q) = %v, want %v", tc.extra, got, tc.want)
		}
	}
}

func TestBusyWhenCallersWaitForTheGate(t *testing.T) {
	gate := cpugate.New(1)
	defer gate.Close()
	s := openTest(t, Options{CPU: gate, RecompressAfter: -1})
	ctx := context.Background()
	held, waited := make(chan struct{}), make(chan error, 1)
	go gate.Do(ctx, func() { <-held })
	// Running, and no longer counted as waiting (it may have waited for
	// the worker to start).
	for gate.Stats().Busy == 0 || gate.Waiting() != 0 {
		time.Sleep(time.Millisecond)
	}
	if s.shouldDefer() {
		t.Fatal("deferring while the only worker is busy but nobody waits")
	}
	go func() { waited <- gate.Do(ctx, func() {}) }()
	for gate.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	if !s.shouldDefer() {
		t.Fatal("not deferring while a caller waits for the gate")
	}
	close(held)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	for gate.Waiting() != 0 { // the Do that ran counts itself out after its hand-off
		time.Sleep(time.Millisecond)
	}
	if s.shouldDefer() {
		t.Fatal("still deferring once the gate caught up")
	}
	now := openTest(t, Options{CPU: gate, CompressNow: true, RecompressAfter: -1})
	now.busy = func() bool { return true }
	if now.shouldDefer() {
		t.Fatal("CompressNow store deferred")
	}
}

// TestRecompressAfterCrash: a replacement renamed into place whose index
// group a crash cut off leaves the list naming an unmarked file and the
// totals counting the old size; the next pass corrects both.
func TestRecompressAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var busy atomic.Bool
	busy.Store(true)
	s := openDeferring(t, dir, Options{RecompressAfter: -1}, &busy)
	c := capture("http://crash.example/", t0, page(4))
	v, _ := mustPut(t, s, c)
	s.Close()
	ref := openTest(t, Options{CompressNow: true})
	rv, _ := mustPut(t, ref, c)
	want, _ := fileOf(t, ref, rv)
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(v.File)), want, 0o644); err != nil {
		t.Fatal(err)
	}

	s = openDeferring(t, dir, Options{RecompressAfter: -1}, &busy)
	if done, err := s.Recompress(ctx, 0); err != nil || done != 1 {
		t.Fatalf("Recompress = %d, %v", done, err)
	}
	if st := s.Stats(); st.Deferred != 0 || st.Bytes != diskBytes(t, dir) {
		t.Fatalf("stats %+v, files hold %d bytes", st, diskBytes(t, dir))
	}
	s.Close()
	if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
		t.Fatalf("fsck: %+v, %v", rep, err)
	}
}

// TestRecompressWithoutGroupSync: with NoSync (and where syncfs is
// missing) the replacement is fsynced on its own and still renamed by its
// index group.
func TestRecompressWithoutGroupSync(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var busy atomic.Bool
	busy.Store(true)
	s := openDeferring(t, dir, Options{NoSync: true, RecompressAfter: -1}, &busy)
	if s.groupSync {
		t.Fatal("NoSync store with group sync")
	}
	c := capture("http://nosync.example/", t0, page(5))
	v, _ := mustPut(t, s, c)
	if _, marked := fileOf(t, s, v); !marked {
		t.Fatal("not deferred")
	}
	if done, err := s.Recompress(ctx, 0); err != nil || done != 1 {
		t.Fatalf("Recompress = %d, %v", done, err)
	}
	ref := openTest(t, Options{CompressNow: true})
	rv, _ := mustPut(t, ref, c)
	want, _ := fileOf(t, ref, rv)
	if got, marked := fileOf(t, s, v); marked || !bytes.Equal(got, want) {
		t.Fatalf("after recompression: marked %v, %d bytes, want %d", marked, len(got), len(want))
	}
	if st := s.Stats(); st.Deferred != 0 || st.Bytes != diskBytes(t, dir) {
		t.Fatalf("stats %+v, files hold %d bytes", st, diskBytes(t, dir))
	}
}

// TestRecompressIncompressible: a payload no encoding shrinks (random
// bytes, which level 6 also keeps in stored blocks) is still replaced by
// the level's encoding, so that the file is unmarked and equal to an
// immediate Put's.
func TestRecompressIncompressible(t *testing.T) {
	ctx := context.Background()
	var busy atomic.Bool
	busy.Store(true)
	s := openDeferring(t, t.TempDir(), Options{RecompressAfter: -1}, &busy)
	ref := openTest(t, Options{CompressNow: true})
	x := uint64(1)
	body := make([]byte, 20<<10)
	for i := range body {
		x = x*6364136223846793005 + 1442695040888963407
		body[i] = byte(x >> 56)
	}
	c := capture("http://random.example/", t0, string(body))
	v, _ := mustPut(t, s, c)
	rv, _ := mustPut(t, ref, c)
	deferred, _ := fileOf(t, s, v)
	want, _ := fileOf(t, ref, rv)
	if len(deferred) > len(want)+64 {
		t.Fatalf("the case is not the one meant: stored %d bytes, level %d bytes", len(deferred), len(want))
	}
	if done, err := s.Recompress(ctx, 0); err != nil || done != 1 {
		t.Fatalf("Recompress = %d, %v", done, err)
	}
	if got, marked := fileOf(t, s, v); marked || !bytes.Equal(got, want) {
		t.Fatalf("marked %v, equal to a direct Put %v", marked, bytes.Equal(got, want))
	}
}

// TestDeferredOverQuotaCompressed: a version that would not fit the quota
// stored uncompressed but fits compressed is compressed at once, not
// refused.
func TestDeferredOverQuotaCompressed(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	body := strings.Repeat("<p>a page of text that compresses well, as HTML does</p>\n", 400)
	ref := openTest(t, Options{CompressNow: true})
	rv, _ := mustPut(t, ref, capture("http://quota.example/", t0, body))
	want, _ := fileOf(t, ref, rv)
	if len(want)*2 > len(body) {
		t.Fatalf("the case is not the one meant: %d bytes compressed of %d", len(want), len(body))
	}
	s := openDeferring(t, t.TempDir(), Options{RecompressAfter: -1, Quota: int64(len(want)) + 512}, &busy)
	v, added := mustPut(t, s, capture("http://quota.example/", t0, body))
	got, marked := fileOf(t, s, v)
	if !added || marked || !bytes.Equal(got, want) {
		t.Fatalf("added %v, marked %v, %d bytes; want the compressed file of %d bytes", added, marked, len(got), len(want))
	}
	if st := s.Stats(); st.Refused != 0 || st.QuotaReached || st.Deferred != 0 {
		t.Fatalf("stats %+v: nothing was refused", st)
	}
	// Uncompressed while it fits.
	s2 := openDeferring(t, t.TempDir(), Options{RecompressAfter: -1, Quota: int64(len(body)) * 2}, &busy)
	v, _ = mustPut(t, s2, capture("http://quota.example/", t0, body))
	if _, marked := fileOf(t, s2, v); !marked {
		t.Fatal("a version that fits uncompressed was not deferred")
	}
}
