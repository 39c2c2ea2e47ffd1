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
