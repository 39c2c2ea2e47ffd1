package archive

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/herod-archive/herod/internal/binread"
)

// oldLayout turns the store in dir (closed) into the one-file layout: each
// version's record becomes objects/ab/cd/<name>.warc.gz and its index
// value format 1, the segments go. It returns the versions.
func oldLayout(t *testing.T, dir string) []Version {
	t.Helper()
	s, err := Open(dir, Options{})
	must(t, err)
	var vs []Version
	must(t, s.Range(context.Background(), id0, id0, func(v Version) error { vs = append(vs, v); return nil }))
	var b leveldb.Batch
	for _, v := range vs {
		data, err := s.ReadFile(context.Background(), v.Entry())
		must(t, err)
		p := filepath.Join(dir, filepath.FromSlash(v.Entry().Path()))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, data, 0o644))
		val := []byte{formatFile}
		full := encodeVersion(v, 1, 0)
		// Format 1 is format 2 without peer, segment, offset and size.
		r := binread.New(full[1:])
		r.String(math.MaxInt)
		r.Varint()
		r.Uvarint()
		r.String(math.MaxInt)
		r.Varint()
		r.Uvarint()
		val = append(val, full[1:len(full)-r.Len()]...)
		b.Put(versionKey(v.Key, v.Time, v.Digest), val)
	}
	it := s.db.NewIterator(nil, nil)
	for it.Next() {
		if k := it.Key(); k[0] == pPeer || (k[0] == pMeta && k[1] == 'e') {
			b.Delete(append([]byte(nil), k...))
		}
	}
	it.Release()
	must(t, s.db.Write(&b, nil))
	must(t, s.Close())
	must(t, os.RemoveAll(filepath.Join(dir, segmentsDir)))
	return vs
}

var id0 = [20]byte{}

// TestMigrateOneFileLayout: Open moves a one-file store into segments
// without loss — same versions, sums, totals, states — including an
// unindexed file a crash left.
func TestMigrateOneFileLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	must(t, err)
	populate(t, s)
	sum0, _ := s.RangeSum(ctx, id0, id0)
	st0 := s.Stats()
	orphanSrc := openTest(t, Options{NoSync: true})
	orphan, _ := mustPut(t, orphanSrc, capture("http://orphan.example/", t0.Add(time.Hour), "unindexed"))
	odata, err := orphanSrc.ReadFile(ctx, orphan.Entry())
	must(t, err)
	must(t, s.Close())
	vs := oldLayout(t, dir)
	op := filepath.Join(dir, filepath.FromSlash(orphan.Entry().Path()))
	must(t, os.MkdirAll(filepath.Dir(op), 0o755))
	must(t, os.WriteFile(op, odata, 0o644))

	s, err = Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if exists(filepath.Join(dir, objectsDir)) {
		t.Fatal("objects/ left after migration")
	}
	for _, v := range vs {
		got, c, err := s.Get(ctx, v.URL, v.Time)
		if err != nil || got.Digest != v.Digest || c == nil {
			t.Fatalf("%s after migration: %+v %v", v.URL, got, err)
		}
	}
	if _, err := s.At(ctx, orphan.URL, orphan.Time); err != nil {
		t.Fatalf("unindexed file not imported: %v", err)
	}
	st := s.Stats()
	if st.Versions != st0.Versions+1 || st.Bytes != st0.Bytes+orphan.Size {
		t.Fatalf("stats after migration %+v, before %+v", st, st0)
	}
	if sum, _ := s.RangeSum(ctx, id0, id0); sum.Count != sum0.Count+1 {
		t.Fatalf("sum after migration %+v, before %+v", sum, sum0)
	}
	if stt, err := s.State(ctx, "http://h0.example/p/0"); err != nil || stt.ETag != "0" {
		t.Fatalf("state lost by migration: %+v %v", stt, err)
	}
	s.Close()
	if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
		t.Fatalf("fsck after migration: %+v %v", rep, err)
	}
}
