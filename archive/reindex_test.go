package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// dumpIndex returns every key and value of the closed store's index.
func dumpIndex(t *testing.T, dir string) map[string]string {
	t.Helper()
	db, err := leveldb.OpenFile(filepath.Join(dir, "index"), &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := make(map[string]string)
	it := db.NewIterator(nil, nil)
	defer it.Release()
	for it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	return out
}

func without(m map[string]string, prefixes ...byte) map[string]string {
	out := maps.Clone(m)
	for k := range out {
		if slices.Contains(prefixes, k[0]) {
			delete(out, k)
		}
	}
	return out
}

func diffIndexes(t *testing.T, want, got map[string]string) {
	t.Helper()
	n := 0
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			if n++; n < 5 {
				t.Errorf("key %q (space %c): live %x, rebuilt %x (present %v)", k, k[0], v, g, ok)
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			if n++; n < 5 {
				t.Errorf("key %q (space %c) only in the rebuilt index", k, k[0])
			}
		}
	}
	if n > 0 {
		t.Fatalf("%d differences between live and rebuilt index", n)
	}
}

// populate fills a store with versions, repeats, checks and states.
func populate(t *testing.T, s *Store) {
	ctx := context.Background()
	for i := 0; i < 120; i++ {
		u := fmt.Sprintf("http://h%d.example/p/%d", i%5, i)
		for d := 0; d < 3; d++ {
			body := fmt.Sprintf("page %d rev %d", i, d/(1+i%3))
			mustPut(t, s, capture(u, t0.Add(time.Duration(d)*24*time.Hour+time.Duration(i)*time.Second), body))
		}
		if i%4 == 0 {
			if err := s.Touch(ctx, u, t0.Add(5*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.SetState(ctx, u, CrawlState{ETag: fmt.Sprint(i), Checked: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A, B, A on one day: a sequence-numbered file.
	for i, b := range []string{"A", "B", "A"} {
		mustPut(t, s, capture("http://seq.example/", t0.Add(time.Minute*time.Duration(i)), b))
	}
}

func TestReindexEqualsLiveIndex(t *testing.T) {
	for _, dict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dict=%v", dict), func(t *testing.T) { testReindexEqualsLiveIndex(t, dict) })
	}
}

// testReindexEqualsLiveIndex is TestReindexEqualsLiveIndex on gzip
// segments, or (dict) on a gzip segment followed by .warc.zst ones.
func testReindexEqualsLiveIndex(t *testing.T, dict bool) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dict {
		mustPut(t, s, capture("http://first.example/", t0, "before the dictionary"))
		withDict(t, s)
	}
	populate(t, s)
	if gz, zst := segmentFiles(t, dir); dict && (gz != 1 || zst == 0) {
		t.Fatalf("%d .warc.gz and %d .warc.zst segments", gz, zst)
	}
	stats := s.Stats()
	s.Close()
	live := dumpIndex(t, dir)

	rep, err := Fsck(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Versions != int(stats.Versions) || rep.Bytes != stats.Bytes {
		t.Fatalf("fsck of a healthy store: corrupt %v, unindexed %v, missing %v, mismatched %d, versions %d; stats %+v",
			rep.Corrupt, rep.Unindexed, rep.Missing, rep.Mismatched, rep.Versions, stats)
	}

	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	diffIndexes(t, live, dumpIndex(t, dir))

	// Without the old index, everything but states and checks comes back,
	// and each URL gets the state its newest version implies.
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	rebuilt := dumpIndex(t, dir)
	diffIndexes(t, without(live, pCrawl, pState, pTouch), without(rebuilt, pCrawl, pState))
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u := "http://h2.example/p/2"
	st, err := s.State(ctx, u)
	newest, _ := s.At(ctx, u, t0.Add(100*day))
	if err != nil || st.ETag != `"x"` || st.Digest != newest.Digest || !st.Checked.Equal(newest.Time) {
		t.Fatalf("derived state %+v, %v; newest %+v", st, err, newest)
	}
}

// TestFsckFindsAndReindexRepairs damages a segment in the middle (a
// record's byte flipped) and at the tail (a record no index entry names,
// then a torn one): Fsck reports each without changing anything; Reindex
// indexes the unnamed record, skips the damaged one, quarantines and cuts
// the torn tail, and keeps crawl states.
func TestFsckFindsAndReindexRepairs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	populate(t, s)
	vs, _ := s.Versions(ctx, "http://h1.example/p/1")
	victim := vs[0]
	other := openTest(t, Options{NoSync: true})
	orphan, _ := mustPut(t, other, capture("http://orphan.example/", t0, "lost index entry"))
	odata, err := other.ReadFile(ctx, orphan.Entry())
	must(t, err)
	s.Close()
	seg := filepath.Join(dir, victim.File)
	data, err := os.ReadFile(seg)
	must(t, err)
	data[victim.Offset+victim.Size/2] ^= 0xff
	orphanAt := int64(len(data))
	data = append(data, odata...)
	data = append(data, odata[:len(odata)/2]...)
	must(t, os.WriteFile(seg, data, 0o644))

	rep, err := Fsck(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantCorrupt := fmt.Sprint([]string{fmt.Sprintf("%s+%d", victim.File, victim.Offset), fmt.Sprintf("%s+%d", victim.File, orphanAt+int64(len(odata)))})
	if rep.OK() || fmt.Sprint(rep.Corrupt) != wantCorrupt || len(rep.Unindexed) != 1 || len(rep.Missing) != 1 || rep.Mismatched == 0 {
		t.Fatalf("fsck: corrupt %v (want %v), unindexed %v, missing %v, mismatched %d",
			rep.Corrupt, wantCorrupt, rep.Unindexed, rep.Missing, rep.Mismatched)
	}
	if after, _ := os.ReadFile(seg); len(after) != len(data) {
		t.Fatal("fsck changed a segment")
	}

	rrep, err := Reindex(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rrep.Damaged) != fmt.Sprint([]string{victim.File}) {
		t.Fatalf("reindex: damaged segments %v, want [%s]", rrep.Damaged, victim.File)
	}
	if q, err := os.ReadFile(filepath.Join(dir, "quarantine", fmt.Sprintf("%s.%d", filepath.Base(seg), victim.Offset))); err != nil || int64(len(q)) != victim.Size {
		t.Fatalf("damaged record not quarantined: %d bytes of %d, %v", len(q), victim.Size, err)
	}
	if q, err := os.ReadFile(filepath.Join(dir, "quarantine", fmt.Sprintf("%s.%d", filepath.Base(seg), orphanAt+int64(len(odata))))); err != nil || len(q) != len(odata)/2 {
		t.Fatalf("torn tail not quarantined: %d bytes, %v", len(q), err)
	}
	rep, err = Fsck(ctx, dir, Options{})
	if err != nil || len(rep.Corrupt) != 1 || len(rep.Unindexed) != 0 || len(rep.Missing) != 0 || rep.Mismatched != 0 {
		t.Fatalf("fsck after reindex: corrupt %v, unindexed %v, missing %v, mismatched %d, %v",
			rep.Corrupt, rep.Unindexed, rep.Missing, rep.Mismatched, err)
	}
	// Rewriting the damaged segment cuts the damaged record out: the
	// archive then checks clean.
	crep, err := Compact(ctx, dir, Options{}, CompactOptions{Segments: rrep.Damaged})
	if err != nil || crep.Rewritten != 1 || crep.After != crep.Before-victim.Size {
		t.Fatalf("compact of the damaged segment: %+v, %v (record of %d bytes)", crep, err, victim.Size)
	}
	if rep, err = Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
		t.Fatalf("fsck after the damaged segment was rewritten: %+v, %v", rep, err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.At(ctx, orphan.URL, t0); err != nil {
		t.Fatalf("orphan not indexed: %v", err)
	}
	if st, err := s.State(ctx, "http://h0.example/p/0"); err != nil || st.ETag != "0" {
		t.Fatalf("state lost by reindex: %+v %v", st, err)
	}
	// Reindex refuses to run under an open store.
	if _, err := Reindex(ctx, dir, Options{}); err == nil {
		t.Fatal("reindex of an open store succeeded")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReindexPlainDictFrame: a .warc.zst segment whose dictionary frame
// holds the dictionary uncompressed (readDictFrame takes either; another
// writer, or a zstd library that compresses it differently, makes a
// frame of another length than this store would) is reindexed from
// where its own frame ends: every record found, no damage reported, and
// the store appends after them and compacts it.
func TestReindexPlainDictFrame(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	must(t, err)
	withDict(t, s)
	bodies := map[string]string{}
	for i := range 20 {
		u := fmt.Sprintf("http://plain.example/%d", i)
		bodies[u] = fmt.Sprintf("page %d %0300d", i, i)
		mustPut(t, s, capture(u, t0.Add(time.Duration(i)*time.Second), bodies[u]))
	}
	must(t, s.Close())
	refs, err := listSegments(dir)
	must(t, err)
	rewritten := 0
	for _, r := range refs {
		if !r.zst {
			continue
		}
		path := filepath.Join(dir, segmentsDir, r.name())
		data, err := os.ReadFile(path)
		must(t, err)
		raw, frame, err := readDictFrame(bytes.NewReader(data), int64(len(data)))
		must(t, err)
		if len(raw) == len(frame)-8 {
			t.Fatalf("%s: the dictionary frame is not compressed", r.name())
		}
		plain := binary.LittleEndian.AppendUint32(nil, dictFrameMagic)
		plain = binary.LittleEndian.AppendUint32(plain, uint32(len(raw)))
		plain = append(append(plain, raw...), data[len(frame):]...)
		must(t, os.WriteFile(path, plain, 0o644))
		rewritten++
	}
	if rewritten == 0 {
		t.Fatal("no .warc.zst segment")
	}
	must(t, os.RemoveAll(filepath.Join(dir, "index")))
	rep, err := Reindex(ctx, dir, Options{NoSync: true})
	must(t, err)
	if len(rep.Corrupt) > 0 || rep.Versions != len(bodies) {
		t.Fatalf("reindex: %d versions of %d, corrupt %v", rep.Versions, len(bodies), rep.Corrupt)
	}
	if rep, err := Fsck(ctx, dir, Options{NoSync: true}); err != nil || !rep.OK() {
		t.Fatalf("fsck after reindex: %+v %v", rep, err)
	}
	s, err = Open(dir, Options{NoSync: true})
	must(t, err)
	mustPut(t, s, capture("http://plain.example/after", t0.Add(time.Hour), "appended after the plain frame"))
	bodies["http://plain.example/after"] = "appended after the plain frame"
	if n, err := s.PurgeURLs(ctx, URLPurge{ID: "p", SURT: Surt("http://plain.example/0"), Exact: true}); err != nil || n != 1 {
		t.Fatalf("purge (rewrites the segment): %d, %v", n, err)
	}
	delete(bodies, "http://plain.example/0")
	for u, want := range bodies {
		_, c, err := s.Get(ctx, u, t0.Add(2*time.Hour))
		if err != nil || string(c.Body) != want {
			t.Fatalf("%s: %v, body %q", u, err, c.Body)
		}
	}
	must(t, s.Close())
	if rep, err := Fsck(ctx, dir, Options{NoSync: true}); err != nil || !rep.OK() {
		t.Fatalf("fsck after purge: %+v %v", rep, err)
	}
}
