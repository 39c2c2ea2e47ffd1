//go:build unix

package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/identity"
)

// The cost of provenance: what signing adds to a stored version (bytes,
// time and CPU of a Put) and what verifying costs an import (versions/s,
// CPU). Each benchmark runs the baseline and the signed arm in alternating
// batches of one run, so that the shared machine's load falls alike on
// both (archive's BenchmarkProvenance runs them one after the other, and
// varied by ±50% between runs); the signature alone is BenchmarkSignVerify.
//
//	go test ./node -run '^$' -bench 'Provenance(Put|Import)' -benchtime 2000x

// benchPage returns a deterministic HTML page of about n bytes: words
// drawn from a small vocabulary, so that it compresses like text.
func benchPage(i, n int) []byte {
	words := strings.Fields("the archive of every page keeps each version a peer fetched and signed under its key " +
		"with links to other pages and scripts styles images lorem ipsum dolor sit amet")
	r := rand.New(rand.NewPCG(uint64(i), 7))
	var b strings.Builder
	b.WriteString("<html><body><p>")
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	b.WriteString("</p></body></html>")
	return []byte(b.String())
}

func benchCapture(i int) archive.Capture {
	return archive.Capture{URL: fmt.Sprintf("http://example.org/page%d", i), Time: time.Date(2026, 11, 20, 0, 0, i, 0, time.UTC),
		Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: benchPage(i, 20<<10)}
}

func benchStore(b *testing.B, dir string, o archive.Options) *archive.Store {
	b.Helper()
	o.NoSync = true
	s, err := archive.Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// armCost is what one arm of interleave took.
type armCost struct {
	wall, cpu float64 // seconds; cpu is the whole process's during the arm's batches
}

// interleave runs n operations of each of two arms in alternating
// batches of 100, so that the machine's load drifts alike over both, and
// returns what each arm took.
func interleave(n int, a, b func(i int)) (ca, cb armCost) {
	const batch = 100
	run := func(c *armCost, f func(int), lo, hi int) {
		start, cpu0 := time.Now(), processCPU()
		for i := lo; i < hi; i++ {
			f(i)
		}
		c.wall += time.Since(start).Seconds()
		c.cpu += (processCPU() - cpu0).Seconds()
	}
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		run(&ca, a, lo, hi)
		run(&cb, b, lo, hi)
	}
	return ca, cb
}

// BenchmarkProvenancePut stores b.N 20 KiB pages into a store without a
// signer and into one with (interleaved): bytes per version on disk and
// the time and CPU of a Put, each arm and their CPU ratio.
func BenchmarkProvenancePut(b *testing.B) {
	signer := testKeySigner(b)
	plain := benchStore(b, filepath.Join(b.TempDir(), "plain"), archive.Options{})
	signed := benchStore(b, filepath.Join(b.TempDir(), "signed"), archive.Options{Signer: signer})
	caps := make([]archive.Capture, b.N)
	for i := range caps {
		caps[i] = benchCapture(i)
	}
	ctx := context.Background()
	put := func(s *archive.Store) func(int) {
		return func(i int) {
			if _, _, err := s.Put(ctx, caps[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	tp, ts := interleave(b.N, put(plain), put(signed))
	b.StopTimer()
	p, q := plain.Stats(), signed.Stats()
	b.ReportMetric(float64(p.Bytes)/float64(p.Versions), "bytes/version-unsigned")
	b.ReportMetric(float64(q.Bytes)/float64(q.Versions), "bytes/version-signed")
	b.ReportMetric(tp.wall/float64(b.N)*1e6, "µs/put-unsigned")
	b.ReportMetric(ts.wall/float64(b.N)*1e6, "µs/put-signed")
	b.ReportMetric(tp.cpu/float64(b.N)*1e6, "cpu-µs/put-unsigned")
	b.ReportMetric(ts.cpu/float64(b.N)*1e6, "cpu-µs/put-signed")
	b.ReportMetric(ts.cpu/tp.cpu, "cpu-ratio")
}

// BenchmarkProvenanceImport imports b.N signed version files into a
// replica without signature verification and into one with it
// (interleaved): versions/s of each arm, per wall and per CPU second, and
// their CPU ratio.
func BenchmarkProvenanceImport(b *testing.B) {
	signer := testKeySigner(b)
	ctx := context.Background()
	src := benchStore(b, filepath.Join(b.TempDir(), "src"), archive.Options{Signer: signer})
	for i := range b.N {
		if _, _, err := src.Put(ctx, benchCapture(i)); err != nil {
			b.Fatal(err)
		}
	}
	var zero id.ID
	ents, err := src.Entries(ctx, zero, zero)
	if err != nil {
		b.Fatal(err)
	}
	files := make([][]byte, len(ents))
	for i, e := range ents {
		if files[i], err = src.ReadFile(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	plain := benchStore(b, filepath.Join(b.TempDir(), "plain"), archive.Options{})
	verified := benchStore(b, filepath.Join(b.TempDir(), "verified"), archive.Options{Verifier: identity.Verifier{}})
	imp := func(s *archive.Store) func(int) {
		return func(i int) {
			if _, _, err := s.Import(ctx, ents[i].Name(), files[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	tp, tv := interleave(len(ents), imp(plain), imp(verified))
	b.StopTimer()
	b.ReportMetric(float64(len(ents))/tp.wall, "versions/s-unverified")
	b.ReportMetric(float64(len(ents))/tv.wall, "versions/s-verified")
	b.ReportMetric(float64(len(ents))/tp.cpu, "versions/cpu-s-unverified")
	b.ReportMetric(float64(len(ents))/tv.cpu, "versions/cpu-s-verified")
	b.ReportMetric(tp.cpu/tv.cpu, "cpu-rate-ratio")
}
