package cpugate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkFetchBesideProcessing measures what the gate is for: one
// goroutine fetching pages one after another over a kept-alive loopback
// connection while 16 others process pages (gzip and SHA-1 of 54 KB, about
// what herod spends on a page of its crawl benchmark, then a 2 ms wait, as
// for a sync: together more CPU than two cores have), with and without a
// gate of GOMAXPROCS-1 slots around the processing. It reports fetches/s and the
// processing rate, which a gate with fewer slots than CPUs gives away.
//
//	go test ./internal/cpugate -run - -bench FetchBesideProcessing -benchtime 3s
func BenchmarkFetchBesideProcessing(b *testing.B) {
	page := prose(54 << 10)
	small := page[:9000]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(small)
	}))
	defer srv.Close()
	cpus := runtime.GOMAXPROCS(0)
	for _, bc := range []struct {
		name  string
		procs int // GOMAXPROCS while it runs
		gate  *Gate
	}{
		{"nogate", cpus, nil},
		{"gate", cpus, New(cpus - 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(bc.procs))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var processed sync.Map
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var buf bytes.Buffer
					zw, _ := gzip.NewWriterLevel(&buf, 6)
					n := 0
					for ctx.Err() == nil {
						if bc.gate.Do(ctx, func() {
							buf.Reset()
							zw.Reset(&buf)
							zw.Write(page)
							zw.Close()
							sha1.Sum(page)
						}) != nil {
							break
						}
						n++
						time.Sleep(2 * time.Millisecond)
					}
					processed.Store(i, n)
				}()
			}
			client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			wg.Wait()
			total := 0
			processed.Range(func(_, v any) bool { total += v.(int); return true })
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "fetches/s")
			b.ReportMetric(float64(total)/elapsed.Seconds(), "processed/s")
		})
	}
}

// prose returns n bytes of HTML paragraphs of pseudo-random words, which
// compress about as real text does (unlike a repeated sentence).
func prose(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString("<p>")
		for range 40 {
			for range 2 + r.IntN(8) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
			b.WriteByte(' ')
		}
		b.WriteString("</p>\n")
	}
	return b.Bytes()[:n]
}
