package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/search/searchtest"
)

// BenchmarkStart measures what a node's start costs in search indexing,
// holding a corpus's pages (one version each): without a mark (a first
// start, or one after a crash) it indexes every version again; after a
// clean stop (a mark, no leaf changed) it indexes none and reads the
// archive's URLs and leaf sums. cpu-ms/start is the process's CPU from
// Run until the service is settled.
//
//	go test ./node/search -run '^$' -bench Start -benchtime 3x
func BenchmarkStart(b *testing.B) {
	const pages = 5000
	ctx := context.Background()
	arc := openArchive(b)
	if err := searchtest.New(1, pages).Load(ctx, arc, 1, nil); err != nil {
		b.Fatal(err)
	}
	leaves, err := arc.LeafHashes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	m := &Mark{Leaves: leaves, Owned: [][]archive.KeyRange{wholeRing}}
	for _, mode := range []string{"nomark", "mark"} {
		b.Run(fmt.Sprintf("versions=%d/%s", pages, mode), func(b *testing.B) {
			var cpu int64
			var indexed int64
			for b.Loop() {
				b.StopTimer()
				sv := markService(b)
				if mode == "mark" {
					sv.Resume, _ = m.Changed(leaves)
				}
				b.StartTimer()
				c0 := cpuTime()
				runUntilIdle(b, sv, arc)
				cpu += int64(cpuTime() - c0)
				indexed = sv.Stats().Indexed
			}
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/start")
			b.ReportMetric(float64(indexed), "versions-indexed")
		})
	}
}
