package archive

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// edSigner signs with an Ed25519 key and names itself by the hex of its
// public key (a stand-in for a libp2p peer id); claim, if set, is the
// peer it claims to be instead (a forger).
type edSigner struct {
	key   ed25519.PrivateKey
	claim string
}

func newEdSigner(seed byte) *edSigner {
	return &edSigner{key: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))}
}

func (s *edSigner) Peer() string {
	if s.claim != "" {
		return s.claim
	}
	return hex.EncodeToString(s.key.Public().(ed25519.PublicKey))
}

func (s *edSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// edVerifier checks edSigner signatures.
type edVerifier struct{}

func (edVerifier) Verify(peer string, msg, sig []byte) error {
	pub, err := hex.DecodeString(peer)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("peer %q is no key", peer)
	}
	if !ed25519.Verify(pub, msg, sig) {
		return errors.New("bad signature")
	}
	return nil
}

// putFile stores c in a fresh store with signer and returns its version
// file's name and bytes.
func putFile(t *testing.T, signer Signer, c Capture) (string, []byte) {
	t.Helper()
	s := openTest(t, Options{Signer: signer})
	v, _ := mustPut(t, s, c)
	e := v.Entry()
	data, err := s.ReadFile(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return e.Name(), data
}

func TestProvenanceSignedRoundTrip(t *testing.T) {
	ctx := context.Background()
	signer := newEdSigner(1)
	name, data := putFile(t, signer, capture("http://example.org/", t0, "<html>hello</html>"))
	dst := openTest(t, Options{Verifier: edVerifier{}})
	v, added, err := dst.Import(ctx, name, data)
	if err != nil || !added {
		t.Fatalf("import of a signed record: %v, added %v", err, added)
	}
	_, c, err := dst.Get(ctx, v.URL, v.Time)
	if err != nil {
		t.Fatal(err)
	}
	block, raw, ok := splitSig(c.Signature)
	if c.Peer != signer.Peer() || !ok || len(raw) != ed25519.SignatureSize {
		t.Fatalf("provenance after import: peer %q, %d-byte signature", c.Peer, len(c.Signature))
	}
	head, want, err := responseBlock(c)
	if err != nil || block != want || block != sha1Of(head, c.Body) {
		t.Fatalf("signed block %s, the record's %s (%v)", block.Short(), want.Short(), err)
	}
	if err := (edVerifier{}).Verify(c.Peer, SignedBlockMessage(c.URL, c.Time, id.Sum(c.Body), block), raw); err != nil {
		t.Fatalf("stored signature: %v", err)
	}
}

// TestSignatureCoversHeaders: a holder that changes a signed capture's
// status or headers (its block digest made to match) is refused, as is
// one that strips the block-signing form to pass the signature off as
// the older one; a record signed in the older form (payload only) still
// imports, and a listed version signed either way verifies.
func TestSignatureCoversHeaders(t *testing.T) {
	ctx := context.Background()
	signer := newEdSigner(5)
	genuine := capture("http://example.org/page", t0, `{"a": 1}`)
	genuine.Header.Set("Content-Type", "application/json")
	src := openTest(t, Options{Signer: signer})
	v, _ := mustPut(t, src, genuine)
	_, signed, err := src.Get(ctx, v.URL, v.Time)
	if err != nil {
		t.Fatal(err)
	}
	// rewrap stores c as it is (a store without a signer keeps its
	// provenance) and returns its record.
	rewrap := func(c Capture) (string, []byte) {
		t.Helper()
		return putFile(t, nil, c)
	}
	forged := *signed
	forged.Header = forged.Header.Clone()
	forged.Header.Set("Content-Type", "text/html")
	redirect := *signed
	redirect.Status, redirect.Header = 302, http.Header{"Location": {"http://evil.example/"}}
	_, raw, _ := splitSig(signed.Signature)
	downgraded := *signed
	downgraded.Header = downgraded.Header.Clone()
	downgraded.Header.Set("Content-Type", "text/html")
	downgraded.Signature = raw
	for name, c := range map[string]Capture{"other Content-Type": forged, "made a redirect": redirect, "older form, other headers": downgraded} {
		n, data := rewrap(c)
		dst := openTest(t, Options{Verifier: edVerifier{}})
		if _, added, err := dst.Import(ctx, n, data); !errors.Is(err, ErrUnsigned) || added {
			t.Errorf("%s: import = added %v, %v; want ErrUnsigned", name, added, err)
		}
		if _, _, err := dst.VerifyRecord(data); !errors.Is(err, ErrUnsigned) {
			t.Errorf("%s: verify = %v; want ErrUnsigned", name, err)
		}
	}
	n, data := rewrap(*signed)
	dst := openTest(t, Options{Verifier: edVerifier{}})
	if _, added, err := dst.Import(ctx, n, data); err != nil || !added {
		t.Fatalf("the genuine record: added %v, %v", added, err)
	}
	if err := dst.VerifySigned(v, signed.Signature); err != nil {
		t.Errorf("a listed version signed with its block: %v", err)
	}

	old := capture("http://example.org/old", t0, "signed before blocks were")
	old.Peer = signer.Peer()
	old.Signature, _ = signer.Sign(SignedMessage(old.URL, t0, id.Sum(old.Body)))
	n, data = rewrap(old)
	ov, added, err := dst.Import(ctx, n, data)
	if err != nil || !added {
		t.Fatalf("a record signed in the older form: added %v, %v", added, err)
	}
	if err := dst.VerifySigned(ov, old.Signature); err != nil {
		t.Errorf("a listed version signed in the older form: %v", err)
	}
}

func TestImportRefusesUnauthenticCaptures(t *testing.T) {
	ctx := context.Background()
	now := t0.Add(48 * time.Hour)
	forger := newEdSigner(2)
	forger.claim = newEdSigner(3).Peer() // signs with its key, names another peer
	for _, tc := range []struct {
		name   string
		signer Signer
		c      Capture
		want   error
	}{
		{"unsigned (a self-consistent record)", nil, capture("http://example.org/a", t0, "forged"), ErrUnsigned},
		{"signed in another peer's name", forger, capture("http://example.org/b", t0, "forged"), ErrUnsigned},
		{"future-dated", newEdSigner(4), capture("http://example.org/c", now.Add(time.Hour), "from 2099"), ErrFuture},
	} {
		name, data := putFile(t, tc.signer, tc.c)
		dst := openTest(t, Options{Verifier: edVerifier{}, Now: func() time.Time { return now }})
		_, added, err := dst.Import(ctx, name, data)
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrCorrupt) || added {
			t.Errorf("%s: import = added %v, %v; want %v (and ErrCorrupt)", tc.name, added, err, tc.want)
		}
		if st := dst.Stats(); st.Versions != 0 {
			t.Errorf("%s: %d versions stored", tc.name, st.Versions)
		}
	}
	// Within the skew, a capture time a little ahead (a fast clock) passes.
	name, data := putFile(t, newEdSigner(4), capture("http://example.org/d", now.Add(MaxClockSkew/2), "ok"))
	dst := openTest(t, Options{Verifier: edVerifier{}, Now: func() time.Time { return now }})
	if _, _, err := dst.Import(ctx, name, data); err != nil {
		t.Errorf("capture within the clock skew: %v", err)
	}
}

// TestPurgePeer: a store holding versions signed by two peers purges one:
// its versions leave the index and the directory hashes, the other's stay,
// Fsck finds the store consistent, and the purged peer's records are
// refused from then on.
func TestPurgePeer(t *testing.T) {
	ctx := context.Background()
	bad, good := newEdSigner(5), newEdSigner(6)
	dir := t.TempDir()
	o := Options{Verifier: edVerifier{}}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name string
		data []byte
	}
	var badFiles []file
	for i := range 6 {
		signer := good
		if i%2 == 0 {
			signer = bad
		}
		name, data := putFile(t, signer, capture(fmt.Sprintf("http://example.org/p%d", i), t0, fmt.Sprint("page ", i)))
		if _, _, err := s.Import(ctx, name, data); err != nil {
			t.Fatal(err)
		}
		if signer == bad {
			badFiles = append(badFiles, file{name, data})
		}
	}
	before, err := s.RangeSum(ctx, id.ID{}, id.ID{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	rep, err := Purge(ctx, dir, bad.Peer(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Purged != 3 {
		t.Fatalf("purge report %+v: want 3 versions purged", rep)
	}
	if frep, err := Fsck(ctx, dir, o); err != nil || !frep.OK() {
		t.Fatalf("fsck after purge: %+v, %v", frep, err)
	}
	s, err = Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Versions != 3 {
		t.Fatalf("%d versions after purge, want 3", st.Versions)
	}
	after, err := s.RangeSum(ctx, id.ID{}, id.ID{})
	if err != nil {
		t.Fatal(err)
	}
	if after == before || after.Count != 3 {
		t.Fatalf("directory hash after purge: %+v (before %+v)", after, before)
	}
	for i := range 6 {
		_, _, err := s.Get(ctx, fmt.Sprintf("http://example.org/p%d", i), t0)
		if purged := i%2 == 0; purged != errors.Is(err, ErrNotFound) {
			t.Errorf("p%d after purge: %v", i, err)
		}
	}
	for _, f := range badFiles {
		if _, _, err := s.Import(ctx, f.name, f.data); !errors.Is(err, ErrRefusedPeer) {
			t.Fatalf("re-import of a purged peer's record: %v, want ErrRefusedPeer", err)
		}
	}
}

// TestPurgePeerOpen purges on an open store: the peer's versions leave
// the index, sums and totals at once, the peer is refused, Fsck agrees.
func TestPurgePeerOpen(t *testing.T) {
	ctx := context.Background()
	good, bad := newEdSigner(6), newEdSigner(5)
	dir := t.TempDir()
	o := Options{Verifier: edVerifier{}}
	s, err := Open(dir, o)
	must(t, err)
	for i := range 4 {
		signer := good
		if i%2 == 0 {
			signer = bad
		}
		name, data := putFile(t, signer, capture(fmt.Sprintf("http://example.org/p%d", i), t0, fmt.Sprint("page ", i)))
		if _, _, err := s.Import(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PurgePeer(ctx, bad.Peer())
	if err != nil || n != 2 || !s.Refuses(bad.Peer()) || s.Refuses(good.Peer()) {
		t.Fatalf("PurgePeer: %d, %v; refuses bad %v, good %v", n, err, s.Refuses(bad.Peer()), s.Refuses(good.Peer()))
	}
	if st := s.Stats(); st.Versions != 2 || st.URLs != 2 {
		t.Fatalf("stats after purge: %+v", st)
	}
	if sum, _ := s.RangeSum(ctx, id.ID{}, id.ID{}); sum.Count != 2 {
		t.Fatalf("range sum after purge: %+v", sum)
	}
	if v, _ := s.Versions(ctx, "http://example.org/p1"); len(v) != 1 || v[0].Peer != good.Peer() {
		t.Fatalf("kept version: %+v", v)
	}
	if n, err := s.PurgePeer(ctx, bad.Peer()); n != 0 || err != nil {
		t.Fatalf("second purge: %d %v", n, err)
	}
	must(t, s.Close())
	if rep, err := Fsck(ctx, dir, o); err != nil || !rep.OK() {
		t.Fatalf("fsck after purge: %+v %v", rep, err)
	}
}

// BenchmarkProvenance measures what signatures cost: Puts of distinct
// 10-30 KB pages (no fsync, gzip 6) unsigned and signed (Ed25519, as a
// node's libp2p key), with the bytes each version file takes, and Imports
// of those files by a replica with and without signature verification.
func BenchmarkProvenance(b *testing.B) {
	pages := benchPages(256)
	ctx := context.Background()
	for _, signed := range []bool{false, true} {
		name := "put/unsigned"
		var signer Signer
		if signed {
			name, signer = "put/signed", newEdSigner(7)
		}
		b.Run(name, func(b *testing.B) {
			s := openTest(b, Options{NoSync: true, GzipLevel: 6, Signer: signer, DictSamples: -1})
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, added, err := s.Put(ctx, benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second))); err != nil || !added {
					b.Fatalf("put: %v %v", added, err)
				}
			}
			reportRates(b, "adds", cpu0)
			b.ReportMetric(float64(s.Stats().Bytes)/float64(b.N), "bytes/version")
		})
	}
	for _, verify := range []bool{false, true} {
		name := "import/unverified"
		var verifier Verifier
		if verify {
			name, verifier = "import/verified", edVerifier{}
		}
		b.Run(name, func(b *testing.B) {
			src := openTest(b, Options{NoSync: true, GzipLevel: 6, Signer: newEdSigner(8), DictSamples: -1})
			names, files := make([]string, b.N), make([][]byte, b.N)
			for i := 0; i < b.N; i++ {
				v, _, err := src.Put(ctx, benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second)))
				if err != nil {
					b.Fatal(err)
				}
				e := v.Entry()
				names[i] = e.Name()
				if files[i], err = src.ReadFile(ctx, e); err != nil {
					b.Fatal(err)
				}
			}
			dst := openTest(b, Options{NoSync: true, Verifier: verifier, DictSamples: -1})
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, added, err := dst.Import(ctx, names[i], files[i]); err != nil || !added {
					b.Fatalf("import: %v %v", added, err)
				}
			}
			reportRates(b, "imports", cpu0)
		})
	}
}
