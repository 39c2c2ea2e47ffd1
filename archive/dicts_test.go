package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// TestTrainingInBackground: while a store trains its dictionary, its
// writes go on as gzip records (before, every Put waited for the
// training); the record after the training ends goes to a .warc.zst
// segment. A store closed during a training drops it and reopens whole,
// without a dictionary, and trains again.
func TestTrainingInBackground(t *testing.T) {
	ctx := context.Background()
	release, started := make(chan struct{}), make(chan struct{}, 1)
	trainFunc = func(samples [][]byte) (*zdict, error) {
		started <- struct{}{}
		<-release
		return trainDict(samples)
	}
	defer func() { trainFunc = trainDict }()
	dir := t.TempDir()
	o := Options{NoSync: true, DictSamples: 20}
	s, err := Open(dir, o)
	must(t, err)
	pages := benchPages(60)
	put := func(s *Store, i int) Version {
		t.Helper()
		v, _, err := s.Put(ctx, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second)))
		must(t, err)
		return v
	}
	for i := range 20 {
		put(s, i)
	}
	<-started
	for i := 20; i < 40; i++ { // the training is held: these would have waited
		if v := put(s, i); strings.HasSuffix(v.File, zstExt) {
			t.Fatalf("record %d in %s during the training", i, v.File)
		}
	}
	close(release)
	s.trainer.wait()
	if v := put(s, 40); !strings.HasSuffix(v.File, zstExt) {
		t.Fatalf("record after the training in %s", v.File)
	}
	must(t, s.Close())

	// Closed while training: nothing lost, no dictionary, a new training.
	release, dir = make(chan struct{}), t.TempDir()
	s, err = Open(dir, o)
	must(t, err)
	for i := range 20 {
		put(s, i)
	}
	<-started
	must(t, s.Close())
	close(release)
	s.trainer.wait()
	s, err = Open(dir, o)
	must(t, err)
	defer s.Close()
	if s.zd.Load() != nil {
		t.Fatal("a training ended after Close gave the reopened store a dictionary")
	}
	if st := s.Stats(); st.Versions != 20 {
		t.Fatalf("%d versions after reopening, want 20", st.Versions)
	}
	trainFunc = trainDict
	for i := 20; i < 40; i++ {
		put(s, i)
	}
	s.trainer.wait()
	if s.zd.Load() == nil {
		t.Fatal("no dictionary trained after reopening")
	}
}

// twoStores returns an owner store with a trained dictionary holding vs
// (the later ones in its .warc.zst segment) and an empty replica that
// verifies signatures.
func twoStores(t *testing.T) (owner, replica *Store, vs []Version) {
	t.Helper()
	ctx := context.Background()
	owner = openTest(t, Options{NoSync: true, DictSamples: 20, Signer: newEdSigner(3)})
	pages := benchPages(60)
	for i := range 60 {
		if i == 20 {
			owner.trainer.wait()
		}
		v, _, err := owner.Put(ctx, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second)))
		must(t, err)
		vs = append(vs, v)
	}
	owner.trainer.wait()
	return owner, openTest(t, Options{NoSync: true, Verifier: edVerifier{}, MaxBody: 1 << 20}), vs
}

// storedBytes returns the bytes of v's record in its segment.
func storedBytes(t *testing.T, s *Store, v Version) []byte {
	t.Helper()
	ref, err := parseSegment(v.File)
	must(t, err)
	data, _, err := s.readRecord(ref.id, v.Offset, v.Size)
	must(t, err)
	return data
}

// TestReplicaStoresBytesAsSent: a replica stores each record as its
// owner stored it, gzip members and zstd frames alike, so that its
// stored bytes equal the owner's; the owner's dictionary, which the
// replica lacks at first, is asked for once (MissingDictError), added,
// and kept across a reopen in the replica's segment (and, the replica
// having none of its own, adopted as its own).
func TestReplicaStoresBytesAsSent(t *testing.T) {
	ctx := context.Background()
	owner, replica, vs := twoStores(t)
	missing, zst := 0, 0
	for _, v := range vs {
		data, err := owner.ReadStored(ctx, v.Entry())
		must(t, err)
		got, added, err := replica.Import(ctx, v.Entry().Name(), data)
		var me *MissingDictError
		if errors.As(err, &me) {
			missing++
			raw, derr := owner.Dictionary(me.Ref)
			must(t, derr)
			must(t, replica.AddDictionary(me.Ref, raw))
			got, added, err = replica.Import(ctx, v.Entry().Name(), data)
		}
		if err != nil || !added {
			t.Fatalf("import %s: %v %v", v.URL, added, err)
		}
		if !bytes.Equal(storedBytes(t, replica, got), storedBytes(t, owner, v)) {
			t.Fatalf("%s: replica's stored bytes differ from the owner's (%s, %s)", v.URL, v.File, got.File)
		}
		if strings.HasSuffix(got.File, zstExt) {
			zst++
		}
	}
	if missing != 1 || zst == 0 {
		t.Fatalf("dictionary missing %d times, %d zstd records: want 1 and some", missing, zst)
	}
	// The replica had none of its own: it adopted the owner's (adopt.go).
	replica.trainer.wait()
	adopted, ok := replica.OwnDictionary()
	if !ok || adopted != owner.zd.Load().ref() {
		t.Fatalf("replica's own dictionary %v %v, want the owner's adopted", adopted, ok)
	}
	dir := replica.Dir()
	must(t, replica.Close())
	again, err := Open(dir, Options{NoSync: true, Verifier: edVerifier{}})
	must(t, err)
	ref := owner.zd.Load().ref()
	if _, err := again.Dictionary(ref); err != nil {
		t.Fatalf("reopened replica lost the owner's dictionary: %v", err)
	}
	if r, ok := again.OwnDictionary(); !ok || r != adopted {
		t.Fatalf("reopened replica's own dictionary %v %v, want %v", r, ok, adopted)
	}
	for _, v := range vs {
		if _, _, err := again.Get(ctx, v.URL, v.Time); err != nil {
			t.Fatal(err)
		}
	}
	must(t, again.Close())
	if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
		t.Fatalf("fsck of the replica: %+v %v", rep, err)
	}
}

// TestForgedDictionaryRefused: a dictionary whose bytes do not hash to
// the name asked for, or whose id is not the named one, is refused and
// not kept.
func TestForgedDictionaryRefused(t *testing.T) {
	owner, replica, _ := twoStores(t)
	ref := owner.zd.Load().ref()
	raw, err := owner.Dictionary(ref)
	must(t, err)
	forged := bytes.Clone(raw)
	forged[len(forged)-1] ^= 1
	other := testDictRaw()
	for _, c := range []struct {
		name string
		ref  DictRef
		raw  []byte
	}{
		{"bytes changed", ref, forged},
		{"another dictionary", ref, other},
		{"right bytes, wrong id", DictRef{ID: ref.ID + 1, Hash: ref.Hash}, raw},
		{"too large", ref, make([]byte, MaxDictSize+1)},
	} {
		if err := replica.AddDictionary(c.ref, c.raw); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", c.name, err)
		}
	}
	if _, err := replica.Dictionary(ref); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused dictionary is held: %v", err)
	}
}

// TestImportFrameBombs: zstd frames from a peer that declare, or expand
// to, much more than Options.MaxBody are refused having allocated little.
func TestImportFrameBombs(t *testing.T) {
	ctx := context.Background()
	owner, replica, vs := twoStores(t)
	zd := owner.zd.Load()
	raw, _ := owner.Dictionary(zd.ref())
	must(t, replica.AddDictionary(zd.ref(), raw))
	name := vs[len(vs)-1].Entry().Name()
	head := fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: %s\r\nContent-Length: %d\r\n\r\n", vs[len(vs)-1].URL, 200<<20)
	zeros := make([]byte, 64<<20)
	plain := append(head, zeros...)
	declared := zd.encoder().EncodeAll(plain, appendRefFrame(nil, zd.ref())) // the frame states its 64 MiB
	// Frames that state no size, with a window of 8 MiB and one within
	// the bound (whose output is cut at the bound).
	streamed := func(window int) []byte {
		var b bytes.Buffer
		b.Write(appendRefFrame(nil, zd.ref()))
		zw, err := zstd.NewWriter(&b, zstd.WithEncoderDict(raw), zstd.WithWindowSize(window))
		must(t, err)
		zw.Write(plain)
		must(t, zw.Close())
		return b.Bytes()
	}
	// A record declaring a 200 MB block in a frame of 1 KiB.
	liar := zd.encoder().EncodeAll(append(head, zeros[:1<<10]...), appendRefFrame(nil, zd.ref()))
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"block declares 200 MB, holds 1 KiB", liar},
		{"declares 64 MiB", declared},
		{"expands to 64 MiB, undeclared, large window", streamed(8 << 20)},
		{"expands to 64 MiB, undeclared, small window", streamed(256 << 10)},
	} {
		var err error
		got := allocatedBy(func() { _, _, err = replica.Import(ctx, name, c.data) })
		t.Logf("%s (%d KiB): %d KiB allocated; %v", c.name, len(c.data)>>10, got>>10, err)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", c.name, err)
		}
		if got > 8<<20 {
			t.Errorf("%s: %d bytes allocated, bound 8 MiB", c.name, got)
		}
	}
}
