package search

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	fts "github.com/herod-archive/herod/search"
)

// wholeRing is one range holding every key.
var wholeRing = []archive.KeyRange{{}}

func markLeaves(seed byte) []archive.DirSum {
	ls := make([]archive.DirSum, archive.Leaves)
	for i := range ls {
		if i%97 == 0 {
			ls[i] = archive.DirSum{Sum: id.OfString(fmt.Sprint(seed, i)), Count: int64(i)}
		}
	}
	return ls
}

func TestMarkFileRoundTrip(t *testing.T) {
	a, b := id.OfString("a"), id.OfString("b")
	m := &Mark{Leaves: markLeaves(1), Owned: [][]archive.KeyRange{{{A: a, B: b}}, {{A: b, B: a}, {A: a, B: a}}, nil}}
	m.Leaves[5].Count = -1
	path := filepath.Join(t.TempDir(), MarkFile)
	if err := WriteMark(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := TakeMark(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Leaves, m.Leaves) || len(got.Owned) != 3 || !reflect.DeepEqual(got.Owned[:2], m.Owned[:2]) || len(got.Owned[2]) != 0 {
		t.Fatalf("decoded mark differs: owned %v", got.Owned)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the mark is still there after TakeMark: %v", err)
	}
	if got, err := TakeMark(path); got != nil || err != nil {
		t.Fatalf("second TakeMark: %v, %v; want none", got, err)
	}

	// A damaged mark (any byte, or cut short) is an error, and gone.
	enc, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{enc[:len(enc)-1], enc[:len(markMagic)+40], append(enc[:100:100], enc[101:]...), flip(enc, len(enc)/2), flip(enc, 0)} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := TakeMark(path); got != nil || err == nil {
			t.Fatalf("damaged mark of %d bytes: %v, %v; want an error", len(bad), got, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatal("a damaged mark was left in place")
		}
	}
	if err := WriteMark(path, &Mark{Leaves: m.Leaves[:10]}); err == nil {
		t.Fatal("a mark of 10 leaves was written")
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 1
	return c
}

func TestMarkChanged(t *testing.T) {
	k := id.OfString("http://x.example/")
	leaf := archive.LeafOf(k)
	var other id.ID
	for i := 0; ; i++ {
		if other = id.OfString(fmt.Sprint("http://y.example/", i)); archive.LeafOf(other) != leaf {
			break
		}
	}
	half := archive.KeyRange{A: k, B: other} // holds other, not k
	cases := []struct {
		name         string
		owned        [][]archive.KeyRange
		now          func([]archive.DirSum)
		kIn, otherIn bool // backfilled
	}{
		{"unchanged, owned throughout", [][]archive.KeyRange{wholeRing, wholeRing, wholeRing}, nil, false, false},
		{"no ranges recorded", nil, nil, true, true},
		{"k's leaf changed", [][]archive.KeyRange{wholeRing}, func(ls []archive.DirSum) { ls[leaf].Count++ }, true, false},
		{"k's leaf's sum changed", [][]archive.KeyRange{wholeRing}, func(ls []archive.DirSum) { ls[leaf].Sum[3] ^= 1 }, true, false},
		{"k not owned at one moment", [][]archive.KeyRange{wholeRing, {half}, wholeRing}, nil, true, false},
	}
	for _, c := range cases {
		m := &Mark{Leaves: markLeaves(2), Owned: c.owned}
		now := markLeaves(2)
		if c.now != nil {
			c.now(now)
		}
		f, n := m.Changed(now)
		if f(k) != c.kIn || f(other) != c.otherIn {
			t.Errorf("%s: backfill k %v, other %v; want %v, %v", c.name, f(k), f(other), c.kIn, c.otherIn)
		}
		if want := map[bool]int{true: 1, false: 0}[c.now != nil]; n != want {
			t.Errorf("%s: %d leaves changed, want %d", c.name, n, want)
		}
	}
}

// openArchive opens an archive of its own for tb, closed when it ends.
func openArchive(tb testing.TB) *archive.Store {
	tb.Helper()
	arc, err := archive.Open(filepath.Join(tb.TempDir(), "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { arc.Close() })
	return arc
}

// markService is a one-node posting ring's Service that owns every key.
func markService(t testing.TB) *Service {
	t.Helper()
	w := &world{}
	sn := syncRing(t, w, p2ptest.Hosts(t, 1), 1)[0]
	w.add(sn.v)
	sn.sv.Owned = func() []archive.KeyRange { return wholeRing }
	return sn.sv
}

func ownsAll(id.ID) bool { return true }

// runUntilIdle runs sv until its backfill is done and nothing waits,
// then stops it.
func runUntilIdle(t testing.TB, sv *Service, arc *archive.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sv.Run(ctx, &fts.Indexer{Archive: arc, Sink: sv, Docs: sv.Store}, arc, ownsAll)
	}()
	testwait.For(t, "the service settled", 30*time.Second, func() error {
		if !sv.Settled() {
			return fmt.Errorf("not settled: %+v", sv.Stats())
		}
		return nil
	})
	cancel()
	<-done
}

func putPage(t *testing.T, arc *archive.Store, url, text string) archive.Version {
	t.Helper()
	v, _, err := arc.Put(context.Background(), archive.Capture{URL: url, Time: time.Now(), Status: 200,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func holdersOf(t *testing.T, sv *Service, term string) int64 {
	t.Helper()
	l, err := sv.Store.Postings(context.Background(), fts.PostingQuery{Term: term, At: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return l.DF
}

// TestMarkResumesBackfill: a start after a clean stop indexes only the
// URLs whose leaf changed while the node was down (and an imported
// version's leaf), and finds every version they hold; a start without a
// mark (a crash) indexes everything.
func TestMarkResumesBackfill(t *testing.T) {
	const n = 40
	ctx := context.Background()
	arc := openArchive(t)
	for i := range n {
		putPage(t, arc, fmt.Sprintf("http://mark.example/%d", i), fmt.Sprintf("resident page %d", i))
	}

	first := markService(t)
	runUntilIdle(t, first, arc)
	if got := first.Stats().Indexed; got != n {
		t.Fatalf("first start indexed %d versions, want %d", got, n)
	}
	if !first.Settled() {
		t.Fatalf("not settled after its backfill and an empty queue: %+v", first.Stats())
	}
	imported := archive.Version{Key: id.OfString("http://mark.example/7")}
	first.Imported(imported)
	leaves, err := arc.LeafHashes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := first.Mark(leaves, wholeRing)
	if m == nil {
		t.Fatal("no mark from a settled service")
	}
	path := filepath.Join(t.TempDir(), MarkFile)
	if err := WriteMark(path, m); err != nil {
		t.Fatal(err)
	}

	// While the node is down: a new version of page 3, a new page.
	putPage(t, arc, "http://mark.example/3", "resident page 3 rewritten by a newcomer")
	putPage(t, arc, "http://mark.example/new", "newcomer page")
	taken, err := TakeMark(path)
	if err != nil || taken == nil {
		t.Fatalf("take mark: %v, %v", taken, err)
	}
	now, err := arc.LeafHashes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changed, leavesChanged := taken.Changed(now)
	// What the changed leaves hold: every version of their URLs.
	want := 0
	if err := arc.URLs(ctx, archive.Query{}, func(u string) error {
		if changed(id.OfString(u)) {
			vs, err := arc.Versions(ctx, u)
			want += len(vs)
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if leavesChanged < 3 || want < 4 || want > 8 {
		t.Fatalf("%d leaves changed holding %d versions; want the leaves of pages 3, 7 and new (4 versions, more only if others share them)", leavesChanged, want)
	}

	second := markService(t)
	second.Resume = changed
	runUntilIdle(t, second, arc)
	if got := second.Stats().Indexed; got != int64(want) {
		t.Errorf("a start after a clean stop indexed %d versions, want %d", got, want)
	}
	if got := holdersOf(t, second, "newcom"); got != 2 {
		t.Errorf("%d versions hold the word stored while down, want 2", got)
	}
	if !second.Settled() {
		t.Error("not settled after a resumed backfill")
	}

	// A crash leaves no mark: everything again.
	third := markService(t)
	runUntilIdle(t, third, arc)
	if got := third.Stats().Indexed; got != n+2 {
		t.Errorf("a start without a mark indexed %d versions, want %d", got, n+2)
	}
}

// TestMarkNeedsSettled: no mark while a version waits, after a stop cut
// its batch short, or before the backfill ran.
func TestMarkNeedsSettled(t *testing.T) {
	arc := openArchive(t)
	leaves := make([]archive.DirSum, archive.Leaves)

	sv := markService(t)
	if sv.Mark(leaves, wholeRing) != nil {
		t.Fatal("a mark before the backfill ran")
	}
	runUntilIdle(t, sv, arc)
	if sv.Mark(leaves, wholeRing) == nil {
		t.Fatal("no mark from an idle service")
	}
	sv.Notify(putPage(t, arc, "http://wait.example/", "waiting"))
	if sv.Mark(leaves, wholeRing) != nil {
		t.Fatal("a mark with a version queued")
	}

	// A stop that cuts a batch short: the flush fails with the context.
	cut := markService(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cut.Run(ctx, &fts.Indexer{Archive: arc, Sink: cut, Docs: cut.Store}, arc, ownsAll)
	}()
	testwait.For(t, "the backfill done", 30*time.Second, func() error {
		if cut.Stats().Backfill || !cut.backfilled.Load() {
			return fmt.Errorf("backfill running")
		}
		return nil
	})
	cancel()
	<-done
	cut.Notify(putPage(t, arc, "http://cut.example/", "cut short"))
	// As Run does with a batch when the stop comes: index it with a
	// context that has ended.
	dead, stop := context.WithCancel(context.Background())
	stop()
	cut.indexBatch(dead, &fts.Indexer{Archive: arc, Sink: cut, Docs: cut.Store}, []fts.Added{<-cut.q()})
	if cut.Stats().Backlog != 0 {
		t.Fatalf("backlog %d after the flush", cut.Stats().Backlog)
	}
	if cut.Settled() || cut.Mark(leaves, wholeRing) != nil {
		t.Fatal("settled after a batch the stop cut short")
	}
}
