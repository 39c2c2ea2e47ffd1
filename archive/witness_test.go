package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// witnessRing is a fetcher, a replica that imports what the fetcher stores
// as it stores it, and the clock they share.
type witnessRing struct {
	now      time.Time
	fetcher  *Store
	replica  *Store
	fSigner  *edSigner
	rSigner  *edSigner
	transfer func(v Version) Version // import v's record into the replica
}

func newWitnessRing(t *testing.T) *witnessRing {
	w := &witnessRing{now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), fSigner: newEdSigner(1), rSigner: newEdSigner(2)}
	clock := func() time.Time { return w.now }
	w.fetcher = openTest(t, Options{Signer: w.fSigner, Verifier: edVerifier{}, Now: clock})
	w.replica = openTest(t, Options{Signer: w.rSigner, Verifier: edVerifier{}, Now: clock})
	w.transfer = func(v Version) Version { return importInto(t, w.replica, w.fetcher, v) }
	return w
}

// importInto imports src's record of v into dst.
func importInto(t *testing.T, dst, src *Store, v Version) Version {
	t.Helper()
	ctx := context.Background()
	data, err := src.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := dst.Import(ctx, v.Entry().Name(), data)
	if err != nil {
		t.Fatalf("import %s: %v", v.URL, err)
	}
	return got
}

func mustDate(t *testing.T, s *Store, v Version) Dating {
	t.Helper()
	d, _, err := s.Date(context.Background(), v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWitnessDating: a replica's statement dates a genuine capture and not
// one back-dated twenty years; the fetcher believes its own; a capture too
// recent to judge is pending.
func TestWitnessDating(t *testing.T) {
	w := newWitnessRing(t)
	genuine, _ := mustPut(t, w.fetcher, capture("http://example.org/news", w.now.Add(-time.Minute), "today's news"))
	forged, _ := mustPut(t, w.fetcher, capture("http://example.org/old", w.now.AddDate(-20, 0, 0), "made up in 2006"))
	gR, fR := w.transfer(genuine), w.transfer(forged)

	if d := mustDate(t, w.fetcher, genuine); d != Fetched {
		t.Errorf("fetcher's own capture: %v, want fetched", d)
	}
	if d := mustDate(t, w.replica, gR); d != Witnessed {
		t.Errorf("genuine capture at its replica: %v, want witnessed", d)
	}
	if d := mustDate(t, w.replica, fR); d != Unwitnessed || d.Shown() {
		t.Errorf("capture back-dated 20 years at its replica: %v, want unwitnessed (not shown)", d)
	}
	ws, err := w.replica.Witnesses(context.Background(), fR)
	if err != nil || len(ws) != 1 || ws[0].Peer != w.rSigner.Peer() || !ws[0].Seen.Equal(w.now) {
		t.Fatalf("the replica's statement of the back-dated capture: %+v, %v; want one, seen now", ws, err)
	}

	// A third store, not witnessed by anyone, sees a recent capture as
	// pending, and the fetcher's own statement (impossible: the fetcher
	// never witnesses itself) dates nothing.
	other := openTest(t, Options{Signer: newEdSigner(3), Verifier: edVerifier{}, Now: func() time.Time { return w.now }})
	r := other.Rule(nil)
	if d, _ := r.Date(genuine, nil, w.now); d != Pending {
		t.Errorf("a minute-old capture without statements: %v, want pending", d)
	}
	if d, _ := r.Date(genuine, nil, w.now.Add(MaxWitnessDelay+time.Minute)); d != Unwitnessed {
		t.Errorf("a capture older than the delay without statements: %v, want unwitnessed", d)
	}
}

// TestWitnessJoiner: a joiner that receives a genuine capture long after
// its date dates it by the replica's statements, not by its own; a
// back-dated one stays unwitnessed whatever it is handed; bad statements
// are refused and counted.
func TestWitnessJoiner(t *testing.T) {
	ctx := context.Background()
	w := newWitnessRing(t)
	genuine, _ := mustPut(t, w.fetcher, capture("http://example.org/a", w.now, "genuine"))
	forged, _ := mustPut(t, w.fetcher, capture("http://example.org/b", w.now.AddDate(-20, 0, 0), "back-dated"))
	gR, fR := w.transfer(genuine), w.transfer(forged)

	w.now = w.now.AddDate(0, 0, 30) // the joiner arrives a month later
	joinerSigner := newEdSigner(5)
	joiner := openTest(t, Options{Signer: joinerSigner, Verifier: edVerifier{}, Now: func() time.Time { return w.now }})
	gJ, fJ := importInto(t, joiner, w.replica, gR), importInto(t, joiner, w.replica, fR)
	if d := mustDate(t, joiner, gJ); d != Unwitnessed {
		t.Fatalf("a month-old capture witnessed only by the joiner itself: %v, want unwitnessed", d)
	}
	ws, err := w.replica.Witnesses(ctx, gR)
	if err != nil {
		t.Fatal(err)
	}
	if added, bad, err := joiner.AddWitnesses(ctx, gJ, ws); err != nil || added != 1 || bad != 0 {
		t.Fatalf("AddWitnesses of the replica's statement: added %d, bad %d, %v", added, bad, err)
	}
	if d, good, _ := joiner.Date(ctx, gJ, nil); d != Witnessed || len(good) != 1 || good[0].Peer != w.rSigner.Peer() {
		t.Fatalf("after the replica's statement: %v by %+v, want witnessed by the replica", d, good)
	}

	fws, _ := w.replica.Witnesses(ctx, fR)
	if _, _, err := joiner.AddWitnesses(ctx, fJ, fws); err != nil {
		t.Fatal(err)
	}
	if d := mustDate(t, joiner, fJ); d != Unwitnessed {
		t.Fatalf("back-dated capture with the replica's late statement: %v, want unwitnessed", d)
	}

	// Statements that must not count: the fetcher vouching for itself, a
	// signature of other bytes, a peer claiming another's name, and a
	// statement by a non-member.
	seen := fJ.Time.Add(time.Hour)
	self, _ := w.fSigner.Sign(WitnessMessage(fJ.URL, fJ.Time, fJ.Digest, seen))
	nine := newEdSigner(9)
	other, _ := nine.Sign(WitnessMessage(fJ.URL, fJ.Time, fJ.Digest, seen.Add(time.Second)))
	liar := newEdSigner(7)
	lie, _ := liar.Sign(WitnessMessage(fJ.URL, fJ.Time, fJ.Digest, seen))
	bad := []Witness{
		{Peer: w.fSigner.Peer(), Seen: seen, Sig: self},
		{Peer: nine.Peer(), Seen: seen, Sig: other},
		{Peer: newEdSigner(8).Peer(), Seen: seen, Sig: lie},
	}
	added, nbad, err := joiner.AddWitnesses(ctx, fJ, bad)
	if err != nil || added != 0 || nbad != 3 {
		t.Fatalf("forged statements: added %d, bad %d, %v; want 0 added, 3 bad", added, nbad, err)
	}
	sybil := Witness{Peer: liar.Peer(), Seen: seen, Sig: lie}
	if err := joiner.Rule(func(p string) bool { return p != liar.Peer() }).Check(fJ, sybil); !errors.Is(err, ErrWitness) {
		t.Fatalf("a statement by a non-member: %v, want ErrWitness", err)
	}
	if d, _ := joiner.Rule(func(p string) bool { return p != liar.Peer() }).Date(fJ, []Witness{sybil}, w.now); d != Unwitnessed {
		t.Fatalf("back-dated capture vouched for by a non-member: %v", d)
	}
}

// TestWitnessSurvivesReindex: statements are not in the segments, so a
// rebuilt index keeps them from the old one; a purge drops them with their
// version.
func TestWitnessSurvivesReindex(t *testing.T) {
	ctx := context.Background()
	w := newWitnessRing(t)
	v, _ := mustPut(t, w.fetcher, capture("http://example.org/r", w.now, "kept"))
	vr := w.transfer(v)
	dir := w.replica.Dir()
	if err := w.replica.Close(); err != nil {
		t.Fatal(err)
	}
	o := Options{Signer: w.rSigner, Verifier: edVerifier{}, Now: func() time.Time { return w.now }}
	if _, err := Reindex(ctx, dir, o); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := mustDate(t, s, vr); d != Witnessed {
		t.Fatalf("after reindex: %v, want witnessed", d)
	}
	if _, err := s.PurgePeer(ctx, w.fSigner.Peer()); err != nil {
		t.Fatal(err)
	}
	if ws, err := s.Witnesses(ctx, vr); err != nil || len(ws) != 0 {
		t.Fatalf("statements after the purge of their version: %+v, %v", ws, err)
	}
}

// TestUndatedListed: a version imported too late to witness is listed by
// Undated until a statement dates it.
func TestUndatedListed(t *testing.T) {
	ctx := context.Background()
	w := newWitnessRing(t)
	v, _ := mustPut(t, w.fetcher, capture("http://example.org/u", w.now, "old news"))
	vr := w.transfer(v)
	w.now = w.now.AddDate(0, 0, 10)
	joiner := openTest(t, Options{Signer: newEdSigner(5), Verifier: edVerifier{}, Now: func() time.Time { return w.now }})
	vj := importInto(t, joiner, w.replica, vr)
	w.fetcher.now = func() time.Time { return w.now }
	fresh, _ := mustPut(t, w.fetcher, capture("http://example.org/fresh", w.now, "newer"))
	importInto(t, joiner, w.fetcher, fresh)
	got, cur, err := joiner.Undated(ctx, nil, 10)
	if err != nil || len(got) != 1 || got[0].URL != vj.URL || cur != nil {
		t.Fatalf("Undated: %+v, cursor %x, %v; want the 10-day-old version only", got, cur, err)
	}
	ws, _ := w.replica.Witnesses(ctx, vr)
	if _, _, err := joiner.AddWitnesses(ctx, vj, ws); err != nil {
		t.Fatal(err)
	}
	if got, _, err := joiner.Undated(ctx, nil, 10); err != nil || len(got) != 0 {
		t.Fatalf("Undated after the replica's statement: %+v, %v", got, err)
	}
}

// BenchmarkImportWitness: what a replica's statement costs on import —
// one Ed25519 signature and one index entry a version. The sub-benchmarks
// import the same records into a store that witnesses (a Signer) and into
// one that does not; the ratio of their ns/op is the CPU cost, and
// bytes/version the statement's size in the index (before goleveldb's
// compression).
func BenchmarkImportWitness(b *testing.B) {
	ctx := context.Background()
	now := time.Now()
	src := openTest(b, Options{Signer: newEdSigner(1), NoSync: true, DictSamples: -1})
	const n = 512
	names, datas := make([]string, n), make([][]byte, n)
	for i := range n {
		v, _, err := src.Put(ctx, capture(fmt.Sprintf("http://example.org/p%d", i), now, fmt.Sprintf("<p>page %d %s</p>", i, strings.Repeat("x", 2000))))
		if err != nil {
			b.Fatal(err)
		}
		names[i] = v.Entry().Name()
		if datas[i], err = src.ReadFile(ctx, v.Entry()); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		signer Signer
	}{{"plain", nil}, {"witness", newEdSigner(2)}} {
		b.Run(c.name, func(b *testing.B) {
			var bytesPer float64
			for b.Loop() {
				b.StopTimer()
				dst := openTest(b, Options{Signer: c.signer, Verifier: edVerifier{}, NoSync: true, DictSamples: -1})
				b.StartTimer()
				for i := range n {
					if _, _, err := dst.Import(ctx, names[i], datas[i]); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if c.signer != nil {
					v, _ := dst.Versions(ctx, "http://example.org/p0")
					ws, _ := dst.Witnesses(ctx, v[0])
					bytesPer = float64(len(witnessPrefix(v[0].Key, v[0].Time, v[0].Digest)) + len(ws[0].Peer) + len(encodeWitness(ws[0])))
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/version")
			b.ReportMetric(bytesPer, "witness-bytes/version")
		})
	}
}
