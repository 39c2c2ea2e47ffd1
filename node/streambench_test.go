package node

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/herod-archive/herod/archive"
)

// segmentFiles lists the segment files under a store's directory.
func segmentFiles(b *testing.B, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && (strings.HasSuffix(p, ".warc.gz") || strings.HasSuffix(p, ".warc.zst")) {
			out = append(out, p)
		}
		return err
	})
	if err != nil || len(out) == 0 {
		b.Fatalf("segments of %s: %d, %v", dir, len(out), err)
	}
	return out
}

// catCount runs cat on files and returns the bytes it wrote.
func catCount(b *testing.B, files []string) int64 {
	var c countingDiscard
	cmd := exec.Command("cat", files...)
	cmd.Stdout = &c
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return c.n
}

// BenchmarkStream measures issue 39's stream figures on the data of
// BenchmarkExchange (HEROD_BENCH_VERSIONS versions of 2 KB pages, one
// store and a four-node ring): a whole-archive stream (all=1) in pages/s
// and MB/s from one store and ring-wide through a gateway, the ring's
// also split in 4 parts taken by 4 concurrent clients, each against cat
// of the same segment files in the same run. MB/s counts the stream's
// bytes (SetBytes), pages/s the versions streamed. Run with
// BENCH=BenchmarkStream scripts/bench-exchange.sh.
func BenchmarkStream(b *testing.B) {
	d := setupExchangeBench(b)
	ctx := context.Background()
	one := segmentFiles(b, d.single.Dir())
	var ring []string
	for _, n := range d.lr.Nodes {
		ring = append(ring, segmentFiles(b, n.store.Dir())...)
	}
	pages := func(b *testing.B) {
		b.ReportMetric(float64(d.versions)*float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	}
	b.Run("cat-one-node", func(b *testing.B) {
		b.SetBytes(catCount(b, one))
		for b.Loop() {
			catCount(b, one)
		}
		pages(b)
	})
	b.Run("stream-one-node", func(b *testing.B) {
		var c countingDiscard
		if _, err := d.single.Export(ctx, archive.ExportOptions{Query: archive.Query{All: true}}, &c, nil); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(c.n)
		for b.Loop() {
			st, err := d.single.Export(ctx, archive.ExportOptions{Query: archive.Query{All: true}}, io.Discard, nil)
			if err != nil || st.Responses != d.versions {
				b.Fatalf("streamed %d of %d versions: %v", st.Responses, d.versions, err)
			}
		}
		pages(b)
	})
	b.Run("cat-ring4", func(b *testing.B) {
		b.SetBytes(catCount(b, ring))
		for b.Loop() {
			catCount(b, ring)
		}
		pages(b)
	})
	gw := d.lr.Nodes[0].GatewayURL()
	b.Run("stream-ring4", func(b *testing.B) {
		b.SetBytes(httpCount(b, gw+"export?all=1"))
		for b.Loop() {
			httpCount(b, gw+"export?all=1")
		}
		pages(b)
	})
	b.Run("stream-ring4-4parts", func(b *testing.B) {
		part := func(i int) string {
			return d.lr.Nodes[i%len(d.lr.Nodes)].GatewayURL() + fmt.Sprintf("export?all=1&part=%d/4", i+1)
		}
		var total int64
		for i := range 4 {
			total += httpCount(b, part(i))
		}
		b.SetBytes(total)
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() { httpCount(b, part(i)) })
			}
			wg.Wait()
		}
		pages(b)
	})
}
