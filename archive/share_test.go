package archive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSignerShare: a replica with a quota takes another signer's versions
// up to half the quota and refuses the rest (ErrSignerShare, nothing
// written); its own fetches still fit, and so do a second signer's; the
// counts survive a reopen.
func TestSignerShare(t *testing.T) {
	ctx := context.Background()
	page := func(i int) string { // incompressible: sizes stay as written
		r := rand.New(rand.NewPCG(uint64(i), 3))
		b := make([]byte, 4<<10)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return string(b)
	}
	junk := openTest(t, Options{Signer: newEdSigner(1), DictSamples: -1})
	honest := openTest(t, Options{Signer: newEdSigner(2), DictSamples: -1})
	self := newEdSigner(3)
	dir := t.TempDir()
	o := Options{Signer: self, Verifier: edVerifier{}, Quota: 100 << 10, DictSamples: -1}
	r, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	imported, refused := 0, 0
	for i := range 40 {
		v, _ := mustPut(t, junk, capture(fmt.Sprintf("http://junk.example/%d", i), t0, page(i)))
		data, _ := junk.ReadFile(ctx, v.Entry())
		_, _, err := r.Import(ctx, v.Entry().Name(), data)
		switch {
		case err == nil:
			imported++
		case errors.Is(err, ErrSignerShare) && errors.Is(err, ErrQuota):
			refused++
		default:
			t.Fatal(err)
		}
	}
	held := r.SignerBytes(newEdSigner(1).Peer())
	if held > 50<<10 || held < 40<<10 || refused == 0 {
		t.Fatalf("junk signer: %d imported (%d bytes), %d refused; want about half the 100 KiB quota", imported, held, refused)
	}
	// The replica's own fetches and another member's still fit.
	if _, added, err := r.Put(ctx, capture("http://own.example/", t0, page(100))); err != nil || !added {
		t.Fatalf("own fetch at the junk signer's share: %v", err)
	}
	hv, _ := mustPut(t, honest, capture("http://honest.example/", t0, page(200)))
	hdata, _ := honest.ReadFile(ctx, hv.Entry())
	if _, _, err := r.Import(ctx, hv.Entry().Name(), hdata); err != nil {
		t.Fatalf("an honest member's version: %v", err)
	}
	if st := r.Stats(); st.ShareRefused != int64(refused) || st.QuotaReached {
		t.Fatalf("stats: %+v, want %d refused by share and the quota not reached", st, refused)
	}
	must(t, r.Close())
	r, err = Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.SignerBytes(newEdSigner(1).Peer()); got != held {
		t.Fatalf("after reopen the junk signer holds %d bytes, was %d", got, held)
	}
}
