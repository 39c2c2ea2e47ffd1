package archive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// TestRangeShare: two members that each keep to their signer's share
// cannot together fill a replicated range past its share of the quota
// (ErrRangeShare, nothing written); another range, and the replica's
// own fetches, still fit; the counts are read again from the index by
// SetRanges after a reopen.
func TestRangeShare(t *testing.T) {
	ctx := context.Background()
	page := func(i int) string { // incompressible: sizes stay as written
		r := rand.New(rand.NewPCG(uint64(i), 5))
		b := make([]byte, 4<<10)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return string(b)
	}
	var half id.ID
	half[0] = 0x80
	low, high := KeyRange{A: id.ID{}, B: half}, KeyRange{A: half, B: id.ID{}} // (0, 0x80…] and the rest
	signers := []*Store{
		openTest(t, Options{Signer: newEdSigner(1), DictSamples: -1}),
		openTest(t, Options{Signer: newEdSigner(2), DictSamples: -1}),
		openTest(t, Options{Signer: newEdSigner(3), DictSamples: -1}),
	}
	dir := t.TempDir()
	o := Options{Signer: newEdSigner(4), Verifier: edVerifier{}, Quota: 200 << 10, DictSamples: -1}
	r, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	must(t, r.SetRanges([]KeyRange{low, high}))
	// urls returns n URLs of signer i whose keys lie in kr.
	urls := func(i, n int, kr KeyRange) []string {
		var out []string
		for j := 0; len(out) < n; j++ {
			u := fmt.Sprintf("http://m%d.example/%d", i, j)
			if kr.Contains(id.OfString(u)) {
				out = append(out, u)
			}
		}
		return out
	}
	imp := func(i int, u string, body string) error {
		v, _ := mustPut(t, signers[i], capture(u, t0, body))
		data, _ := signers[i].ReadFile(ctx, v.Entry())
		_, _, err := r.Import(ctx, v.Entry().Name(), data)
		return err
	}
	// Members 0 and 1 each send 20 pages (80 KiB) of the low range: each
	// within its signer's share (100 KiB), together past the range's.
	var rangeRefused int
	for i := range 2 {
		for j, u := range urls(i, 20, low) {
			switch err := imp(i, u, page(100*i+j)); {
			case err == nil:
			case errors.Is(err, ErrRangeShare) && errors.Is(err, ErrQuota):
				rangeRefused++
			default:
				t.Fatal(err)
			}
		}
	}
	held := r.RangeBytes()
	if held[0] > 100<<10 || held[0] < 90<<10 || rangeRefused == 0 {
		t.Fatalf("low range holds %d bytes, %d refused; want about the 100 KiB of its share", held[0], rangeRefused)
	}
	// The other range, and the replica's own fetch in the full one, fit.
	for j, u := range urls(2, 3, high) {
		if err := imp(2, u, page(500+j)); err != nil {
			t.Fatalf("a version of the other range: %v", err)
		}
	}
	if _, added, err := r.Put(ctx, capture(urls(9, 1, low)[0], t0, page(900))); err != nil || !added {
		t.Fatalf("own fetch in the full range: %v", err)
	}
	if st := r.Stats(); st.RangeRefused != int64(rangeRefused) || st.QuotaReached {
		t.Fatalf("stats %+v, want %d refused for the range's share", st, rangeRefused)
	}
	lowBytes := r.RangeBytes()[0]
	must(t, r.Close())
	if r, err = Open(dir, o); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	must(t, r.SetRanges([]KeyRange{low, high}))
	if got := r.RangeBytes(); got[0] != lowBytes || got[1] < 12<<10 {
		t.Fatalf("after reopen the ranges hold %v bytes, the low one %d before", got, lowBytes)
	}
	if err := r.SetRanges([]KeyRange{{A: half, B: half}}); err == nil {
		t.Fatal("the whole ring accepted as a range")
	}
}
