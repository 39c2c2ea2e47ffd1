package query

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/node/identity"
)

// BenchmarkJudgeRows measures what verifying another member's listing
// costs the asking node, per row (ns/row), against merging the same rows
// unverified, in one run: 1,000 rows of another fetcher, each listed by
// two members (the URL's owner and a replica in a ring of 16 real nodes,
// found by a holder lookup per owner range), each copy with the
// replica's witness statement. "holders" is the holder check alone
// (holders.go). "verified" checks one signature a version (the
// version is recent: no statement needed); "witnesses" also checks the
// statements, as the CDX does when it shows them.
func BenchmarkJudgeRows(b *testing.B) {
	ctx := context.Background()
	fetcher, err := identity.Generate()
	if err != nil {
		b.Fatal(err)
	}
	replica, err := identity.Generate()
	if err != nil {
		b.Fatal(err)
	}
	asker, err := identity.Generate()
	if err != nil {
		b.Fatal(err)
	}
	st, err := archive.Open(b.TempDir(), archive.Options{NoSync: true, Signer: fetcher, Verifier: identity.Verifier{}, DictSamples: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	member := &Service{Store: st}
	now := time.Now().UTC().Add(-time.Hour)
	var vs []archive.Version
	var ps []*Proof
	var by []string
	fr := newFakeRing(16)
	for i := range 1000 {
		v, _, err := st.Put(ctx, archive.Capture{URL: fmt.Sprintf("http://h.example/%d", i), Time: now.Add(time.Duration(i) * time.Millisecond),
			Status: 200, Body: []byte(fmt.Sprint("page ", i))})
		if err != nil {
			b.Fatal(err)
		}
		v, p, err := member.proofOf(ctx, v)
		if err != nil {
			b.Fatal(err)
		}
		seen := v.Time.Add(time.Second)
		sig, err := replica.Sign(archive.WitnessMessage(v.URL, v.Time, v.Digest, seen))
		if err != nil {
			b.Fatal(err)
		}
		p.Witnesses = []archive.Witness{{Peer: replica.Peer(), Seen: seen, Sig: sig}}
		o := fr.owner(v.Key)
		for j := range 2 {
			vs, ps = append(vs, v), append(ps, &p)
			by = append(by, fr.nodes[(o+j)%len(fr.nodes)].Peer)
		}
	}
	asking, err := archive.Open(b.TempDir(), archive.Options{NoSync: true, Signer: asker, Verifier: identity.Verifier{}})
	if err != nil {
		b.Fatal(err)
	}
	defer asking.Close()
	svc := &Service{Store: asking, Ring: fr, Self: fr.nodes[2].Contact}
	rows := make([]cdx.Row, len(vs))
	for i, v := range vs {
		rows[i] = cdx.Row{Version: v}
	}
	// perRow reports the process's CPU time (user and system, all
	// threads) per version since start: unlike wall time, a loaded
	// machine hardly moves it.
	perRow := func(b *testing.B, start time.Duration) {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N*len(vs)/2), "cpu-ns/row")
	}
	b.Run("trusting", func(b *testing.B) {
		start := cpuTime()
		for b.Loop() {
			if got := mergeRows(keyRows(rows), false); len(got) != len(vs)/2 {
				b.Fatalf("%d rows", len(got))
			}
		}
		perRow(b, start)
	})
	// The holder check alone (heldRows, in judge): a lookup per owner
	// range, a hash and a search per version.
	b.Run("holders", func(b *testing.B) {
		groups := make([]*rowGroup, len(vs)/2)
		for i := range groups {
			groups[i] = &rowGroup{rows: []int{2 * i, 2*i + 1}}
		}
		start := cpuTime()
		for b.Loop() {
			held, err := svc.heldRows(ctx, vs, ps, by, groups)
			if err != nil || slices.Contains(held, false) {
				b.Fatalf("held %v, %v", held, err)
			}
		}
		perRow(b, start)
	})
	for _, vouch := range []bool{false, true} {
		name := "verified"
		if vouch {
			name = "witnesses"
		}
		b.Run(name, func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				fate, _, err := svc.judge(ctx, vs, ps, by, vouch)
				if n := countFate(fate, rowKept); err != nil || n != len(vs)/2 {
					b.Fatalf("%d rows kept", n)
				}
				mergeRows(keyRows(rows), false)
			}
			perRow(b, start)
		})
	}
}

// cpuTime returns the CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
