package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
)

// exchangeBench is the data of BenchmarkExchange: one host's versions,
// all in one store (the one-node baseline) and spread over the stores of
// a four-node ring.
type exchangeBench struct {
	single   *archive.Store
	lr       *LocalRing
	versions int
}

// benchHost is the host of BenchmarkExchange's data.
const benchHost = "bench.example"

// benchVersions is the number of versions: HEROD_BENCH_VERSIONS or 100k,
// the size of the CDX host query.
func benchVersions() int {
	if n, err := strconv.Atoi(os.Getenv("HEROD_BENCH_VERSIONS")); err == nil && n > 0 {
		return n
	}
	return 100000
}

// exchangePage is an HTML page of about 2 KB with links.
func exchangePage(i, day int) []byte {
	b := fmt.Appendf(nil, "<html><head><title>Page %d</title></head><body><h1>Page %d, day %d</h1>", i, i, day)
	for j := 1; j <= 10; j++ {
		b = fmt.Appendf(b, `<p>Paragraph %d of page %d. <a href="/p/%d">link %d</a></p>`, j, i, (i*7+j)%5000, j)
	}
	for len(b) < 2000 {
		b = append(b, " lorem ipsum dolor sit amet"...)
	}
	return append(b, "</body></html>"...)
}

// setupExchangeBench loads the data; b's cleanup removes it.
func setupExchangeBench(b *testing.B) *exchangeBench {
	ctx := context.Background()
	dir := b.TempDir()
	n := benchVersions()
	single, err := archive.Open(filepath.Join(dir, "single"), archive.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { single.Close() })
	lr := startStableRing(ctx, b, filepath.Join(dir, "ring"), 4, Config{VirtualServers: 4, StabilizeInterval: 100 * time.Millisecond, NoSync: true})
	b.Cleanup(func() { lr.Close() })
	// Recent captures, a minute apart per "day": shown by every node
	// without witness statements (archive.MaxWitnessDelay), so that the
	// ring-wide CDX lists every row.
	t0 := time.Now().UTC().Add(-time.Hour)
	const days = 4
	for i := 0; i < n; i++ {
		page, day := i/days, i%days
		c := archive.Capture{
			URL: fmt.Sprintf("http://%s/p/%d", benchHost, page), Time: t0.Add(time.Duration(day)*time.Minute + time.Duration(page)*time.Millisecond),
			Status: 200, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: exchangePage(page, day),
		}
		for _, s := range []*archive.Store{single, lr.Nodes[page%len(lr.Nodes)].store} {
			if _, _, err := s.Put(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	}
	return &exchangeBench{single: single, lr: lr, versions: n}
}

// countingDiscard counts bytes.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkExchange measures the figures on one host of
// HEROD_BENCH_VERSIONS (default 100000) versions of 2 KB pages: export
// throughput (MB/s of WARC: SetBytes is the WARC size) from one store and
// ring-wide through a gateway of a four-node ring, as WARC and WACZ, and
// CDX rows/s for the host query ring-wide against a plain index scan of
// the same rows in one store. Run with scripts/bench-exchange.sh.
func BenchmarkExchange(b *testing.B) {
	d := setupExchangeBench(b)
	ctx := context.Background()
	q := archive.Query{Host: benchHost}
	var warcBytes countingDiscard
	if _, err := d.single.Export(ctx, archive.ExportOptions{Query: q}, &warcBytes, nil); err != nil {
		b.Fatal(err)
	}
	gw := d.lr.Nodes[0].GatewayURL()

	b.Run("export-warc-one-node", func(b *testing.B) {
		b.SetBytes(warcBytes.n)
		for b.Loop() {
			if _, err := d.single.Export(ctx, archive.ExportOptions{Query: q}, io.Discard, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("export-wacz-one-node", func(b *testing.B) {
		b.SetBytes(warcBytes.n)
		for b.Loop() {
			pr, pw := io.Pipe()
			go func() {
				_, err := d.single.Export(ctx, archive.ExportOptions{Query: q}, pw, nil)
				pw.CloseWithError(err)
			}()
			z := exchange.NewWACZ(io.Discard, exchange.WACZOptions{})
			if _, err := z.AddWARC(pr); err != nil {
				b.Fatal(err)
			}
			if err := z.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, format := range []string{"warc", "wacz"} {
		b.Run("export-"+format+"-ring4", func(b *testing.B) {
			// The ring's stores compress as a node does, so their WARC
			// differs in size from the baseline's: MB/s counts their own.
			ringBytes := httpCount(b, gw+"export?host="+benchHost)
			b.SetBytes(ringBytes)
			for b.Loop() {
				httpCount(b, gw+"export?format="+format+"&host="+benchHost)
			}
		})
	}
	b.Run("cdx-scan-baseline", func(b *testing.B) {
		for b.Loop() {
			rows := 0
			if err := d.single.Scan(ctx, q, func(archive.Version) error { rows++; return nil }); err != nil {
				b.Fatal(err)
			}
			if rows != d.versions {
				b.Fatalf("%d rows", rows)
			}
		}
		b.ReportMetric(float64(d.versions)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("cdx-host-ring4", func(b *testing.B) {
		u := gw + "cdx?matchType=host&output=text&url=" + url.QueryEscape(benchHost)
		for b.Loop() {
			if n := httpLines(b, u); n != d.versions {
				b.Fatalf("cdx lists %d rows of %d", n, d.versions)
			}
		}
		b.ReportMetric(float64(d.versions)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	// pywb's cdxj, whose default fields add each row's fetcher and
	// witnesses.
	b.Run("cdx-host-ring4-cdxj", func(b *testing.B) {
		u := gw + "cdx?matchType=host&url=" + url.QueryEscape(benchHost)
		for b.Loop() {
			if n := httpLines(b, u); n != d.versions {
				b.Fatalf("cdx lists %d rows of %d", n, d.versions)
			}
		}
		b.ReportMetric(float64(d.versions)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// httpLines fetches u and returns its body's lines; the response must
// be 200.
func httpLines(b *testing.B, u string) int {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %s %v", u, resp.Status, err)
	}
	return bytes.Count(body, []byte("\n"))
}

// httpCount fetches u and returns its body's size; the response must be
// 200 and, for an export, complete.
func httpCount(b *testing.B, u string) int64 {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %s %v", u, resp.Status, err)
	}
	if st := resp.Trailer.Get(gateway.TrailerExportStatus); resp.Header.Get("Trailer") != "" && st != "complete" {
		b.Fatalf("GET %s: export status %q: %s", u, st, resp.Trailer.Get(gateway.TrailerExportError))
	}
	return n
}
