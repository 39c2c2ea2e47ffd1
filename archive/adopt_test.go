package archive

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// importAll imports vs from owner into replica, fetching the owner's
// dictionary when the replica lacks it.
func importAll(t *testing.T, owner, replica *Store, vs []Version) {
	t.Helper()
	ctx := context.Background()
	for _, v := range vs {
		data, err := owner.ReadStored(ctx, v.Entry())
		must(t, err)
		_, _, err = replica.Import(ctx, v.Entry().Name(), data)
		var me *MissingDictError
		if errors.As(err, &me) {
			raw, derr := owner.Dictionary(me.Ref)
			must(t, derr)
			must(t, replica.AddDictionary(me.Ref, raw))
			_, _, err = replica.Import(ctx, v.Entry().Name(), data)
		}
		must(t, err)
	}
}

// TestAdoptPeerDictionary: a store without a dictionary that imports
// records compressed with a peer's adopts it once it has enough samples
// and it fits them: it trains none, writes its own records with it, and
// keeps it as its own across a reopen.
func TestAdoptPeerDictionary(t *testing.T) {
	ctx := context.Background()
	owner, _, vs := twoStores(t)
	replica := openTest(t, Options{NoSync: true, Verifier: edVerifier{}, MaxBody: 1 << 20, DictSamples: 200})
	ok, with, without := fits(owner.zd.Load(), benchPages(40))
	t.Logf("owner's dictionary packs 40 pages to %d bytes, %d without (%.2f)", with, without, float64(with)/float64(without))
	if !ok {
		t.Fatal("the owner's dictionary does not fit pages like its own")
	}
	importAll(t, owner, replica, vs)
	replica.trainer.wait()
	zd := replica.zd.Load()
	if zd == nil || zd.ref() != owner.zd.Load().ref() {
		t.Fatalf("replica's dictionary %v, want the owner's %v", zd, owner.zd.Load().ref())
	}
	if got := replica.Stats().Dictionary; got != "adopted" {
		t.Fatalf("replica's Stats().Dictionary = %q, want adopted", got)
	}
	if got := owner.Stats().Dictionary; got != "trained" {
		t.Fatalf("owner's Stats().Dictionary = %q, want trained", got)
	}
	pages := benchPages(80)
	v, _, err := replica.Put(ctx, benchCapture(70, pages[70], t0.Add(time.Hour)))
	must(t, err)
	if got, _ := parseSegment(v.File); !got.zst {
		t.Fatalf("the replica's own record went to %s, not a segment of the adopted dictionary", v.File)
	}
	dir := replica.Dir()
	must(t, replica.Close())
	again, err := Open(dir, Options{NoSync: true, Verifier: edVerifier{}})
	must(t, err)
	defer again.Close()
	if r, ok := again.OwnDictionary(); !ok || r != owner.zd.Load().ref() {
		t.Fatalf("reopened store's own dictionary %v %v, want the adopted one", r, ok)
	}
}

// TestAdoptRefusesUnfitDictionary: a peer's dictionary that packs the
// store's samples no better than no dictionary is not adopted.
func TestAdoptRefusesUnfitDictionary(t *testing.T) {
	// A dictionary trained on records of another kind (bytes above 0x80
	// from a small alphabet, nothing like HTML).
	rng := rand.New(rand.NewPCG(1, 2))
	var other [][]byte
	for range 300 {
		b := make([]byte, 4<<10)
		for i := range b {
			b[i] = 0x80 + byte(rng.IntN(24))*3
		}
		other = append(other, b)
	}
	zd, err := trainDict(other)
	must(t, err)
	samples := benchPages(40)
	ok, with, without := fits(zd, samples)
	t.Logf("unrelated dictionary packs 40 pages to %d bytes, %d without (%.2f)", with, without, float64(with)/float64(without))
	if ok {
		t.Fatal("a dictionary of unrelated bytes fits")
	}
	s := openTest(t, Options{NoSync: true, DictSamples: 200})
	for _, p := range samples {
		s.trainer.offer(p)
	}
	s.trainer.consider(zd)
	s.trainer.wait()
	if s.zd.Load() != nil {
		t.Fatal("an unfit dictionary was adopted")
	}
	if s.trainer.off.Load() {
		t.Fatal("the trainer stopped collecting after refusing a dictionary")
	}
}

// TestDictWait: with Options.DictWait a store whose samples are complete
// waits that many more records for a peer's dictionary, then trains its
// own.
func TestDictWait(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true, DictSamples: 20, DictWait: 30})
	pages := benchPages(60)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			_, _, err := s.Put(ctx, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second)))
			must(t, err)
		}
		s.trainer.wait()
	}
	put(0, 45)
	if s.zd.Load() != nil || s.trainer.off.Load() {
		t.Fatal("trained before the wait for a peer's dictionary ended")
	}
	put(45, 60)
	if s.zd.Load() == nil || s.Stats().Dictionary != "trained" {
		t.Fatalf("no dictionary trained after the wait (%q)", s.Stats().Dictionary)
	}
}

// TestAdoptHeldAtTraining: a store that received a peer's records (and
// so its dictionary) before it had samples enough to weigh it adopts
// that dictionary when its samples are complete, and trains none.
func TestAdoptHeldAtTraining(t *testing.T) {
	ctx := context.Background()
	owner, _, vs := twoStores(t)
	trained := 0
	trainFunc = func(samples [][]byte) (*zdict, error) {
		trained++
		return trainDict(samples)
	}
	defer func() { trainFunc = trainDict }()
	replica := openTest(t, Options{NoSync: true, Verifier: edVerifier{}, MaxBody: 1 << 20, DictSamples: 60})
	importAll(t, owner, replica, vs[40:50]) // zstd records, 10 samples: too few to weigh the dictionary
	if replica.zd.Load() != nil {
		t.Fatal("adopted on 10 samples")
	}
	pages := benchPages(120)
	for i := 60; i < 120; i++ {
		_, _, err := replica.Put(ctx, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second)))
		must(t, err)
	}
	replica.trainer.wait()
	if got := replica.Stats().Dictionary; got != "adopted" || trained != 0 {
		t.Fatalf("Stats().Dictionary = %q after %d trainings, want adopted and none", got, trained)
	}
	if r, ok := replica.OwnDictionary(); !ok || r != owner.zd.Load().ref() {
		t.Fatalf("own dictionary %v %v, want the owner's", r, ok)
	}
}
