package archive

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// TestImportBufReuse: zstd records imported eight at a time, each decoded
// into a buffer of the pool that the next import reuses, and checked
// (CheckImport) in between, are stored intact: every copy reads back as
// the owner's capture.
func TestImportBufReuse(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{NoSync: true, DictSamples: -1, Signer: newEdSigner(1)})
	zd := withDict(t, src)
	pages := benchPages(64)
	var vs []Version
	for i := range 256 {
		v, _ := mustPut(t, src, benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second)))
		vs = append(vs, v)
	}
	dst := openTest(t, Options{NoSync: true, DictSamples: -1, Verifier: edVerifier{}, Signer: newEdSigner(2), MaxBody: 1 << 20})
	raw, err := src.Dictionary(zd.ref())
	must(t, err)
	must(t, dst.AddDictionary(zd.ref(), raw))
	var wg sync.WaitGroup
	errs := make(chan error, len(vs))
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(vs); i += 8 {
				e := vs[i].Entry()
				data, err := src.ReadStored(ctx, e)
				if err == nil {
					_, err = dst.CheckImport(ctx, e.Name(), data)
				}
				if err == nil {
					_, _, err = dst.Import(ctx, e.Name(), data)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, v := range vs {
		want, err := src.Read(ctx, v)
		must(t, err)
		got, err := dst.ReadFile(ctx, v.Entry())
		must(t, err)
		f, err := decodeMember(got)
		must(t, err)
		if f.capture.URL != want.URL || !bytes.Equal(f.capture.Body, want.Body) || f.capture.Peer != want.Peer {
			t.Fatalf("%s: copy differs from the owner's capture", v.URL)
		}
	}
}

// TestDictWaitImports: a store whose samples are complete and that waits
// for a peer's dictionary counts the gzip records it imports towards
// Options.DictWait without keeping their bytes, then trains.
func TestDictWaitImports(t *testing.T) {
	owner := openTest(t, Options{NoSync: true, DictSamples: -1})
	pages := benchPages(60)
	var vs []Version
	for i := range 60 {
		v, _ := mustPut(t, owner, benchCapture(i, pages[i], t0.Add(time.Duration(i)*time.Second)))
		vs = append(vs, v)
	}
	s := openTest(t, Options{NoSync: true, DictSamples: 20, DictWait: 30})
	importAll(t, owner, s, vs[:20])
	if s.trainer.collecting() {
		t.Fatal("still collecting after 20 samples of 20")
	}
	importAll(t, owner, s, vs[20:45])
	s.trainer.wait()
	if s.zd.Load() != nil || s.trainer.off.Load() {
		t.Fatal("trained before the wait for a peer's dictionary ended")
	}
	importAll(t, owner, s, vs[45:])
	s.trainer.wait()
	if s.zd.Load() == nil || s.Stats().Dictionary != "trained" {
		t.Fatalf("no dictionary trained after the wait (%q)", s.Stats().Dictionary)
	}
}
