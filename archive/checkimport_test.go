package archive

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCheckImport: CheckImport refuses what Import refuses (an unsigned
// record, another peer's name, a future date, a purged fetcher), passes a
// signed record with the version Import would store, and stores nothing.
func TestCheckImport(t *testing.T) {
	ctx := context.Background()
	now := t0.Add(48 * time.Hour)
	forger := newEdSigner(2)
	forger.claim = newEdSigner(3).Peer()
	dst := openTest(t, Options{Verifier: edVerifier{}, Now: func() time.Time { return now }})
	for _, tc := range []struct {
		name   string
		signer Signer
		c      Capture
		want   error
	}{
		{"unsigned", nil, capture("http://example.org/a", t0, "forged"), ErrUnsigned},
		{"signed in another peer's name", forger, capture("http://example.org/b", t0, "forged"), ErrUnsigned},
		{"future-dated", newEdSigner(4), capture("http://example.org/c", now.Add(time.Hour), "from 2099"), ErrFuture},
	} {
		name, data := putFile(t, tc.signer, tc.c)
		if _, err := dst.CheckImport(ctx, name, data); !errors.Is(err, tc.want) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want %v (and ErrCorrupt)", tc.name, err, tc.want)
		}
	}
	signer := newEdSigner(5)
	name, data := putFile(t, signer, capture("http://example.org/d", t0, "genuine"))
	v, err := dst.CheckImport(ctx, name, data)
	if err != nil || v.URL != "http://example.org/d" || !v.Time.Equal(t0) || v.Peer != signer.Peer() || v.Entry().Name() != name {
		t.Fatalf("signed record: %+v, %v", v, err)
	}
	if _, err := dst.CheckImport(ctx, "not-a-name", data); err == nil {
		t.Error("a bad name passed")
	}
	if st := dst.Stats(); st.Versions != 0 {
		t.Fatalf("CheckImport stored %d versions", st.Versions)
	}
	if _, err := dst.PurgePeer(ctx, signer.Peer()); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.CheckImport(ctx, name, data); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a purged fetcher's record: %v, want ErrCorrupt", err)
	}
}

// TestImportIf: the record is verified before take is asked (a forged one
// never reaches it); one not taken is stored nowhere and returns its
// version with ErrNotTaken; one taken is stored; one held already returns
// without asking.
func TestImportIf(t *testing.T) {
	ctx := context.Background()
	dst := openTest(t, Options{Verifier: edVerifier{}, Now: func() time.Time { return t0.Add(time.Hour) }})
	var asked []Version
	take := func(ok bool) func(Version) bool {
		return func(v Version) bool { asked = append(asked, v); return ok }
	}
	forger := newEdSigner(2)
	forger.claim = newEdSigner(3).Peer()
	name, data := putFile(t, forger, capture("http://example.org/forged", t0, "forged"))
	if _, _, err := dst.ImportIf(ctx, name, data, take(true)); !errors.Is(err, ErrUnsigned) || len(asked) != 0 {
		t.Fatalf("forged record: %v, take asked %d times", err, len(asked))
	}
	signer := newEdSigner(5)
	name, data = putFile(t, signer, capture("http://example.org/d", t0, "genuine"))
	v, added, err := dst.ImportIf(ctx, name, data, take(false))
	if !errors.Is(err, ErrNotTaken) || added || v.URL != "http://example.org/d" || v.Peer != signer.Peer() ||
		len(asked) != 1 || asked[0].Entry().Name() != name {
		t.Fatalf("not taken: %+v, %v, %v; asked %+v", v, added, err, asked)
	}
	if st := dst.Stats(); st.Versions != 0 {
		t.Fatalf("a record not taken stored %d versions", st.Versions)
	}
	if v, added, err = dst.ImportIf(ctx, name, data, take(true)); err != nil || !added || len(asked) != 2 {
		t.Fatalf("taken: %v, %v; asked %d times", added, err, len(asked))
	}
	if _, err := dst.At(ctx, v.URL, t0); err != nil {
		t.Fatalf("taken record not stored: %v", err)
	}
	if _, added, err = dst.ImportIf(ctx, name, data, take(true)); err != nil || added || len(asked) != 2 {
		t.Fatalf("held already: %v, %v; asked %d times", added, err, len(asked))
	}
	if _, _, err := dst.ImportIf(ctx, name, data, nil); err == nil {
		t.Fatal("ImportIf without take imported")
	}
}
