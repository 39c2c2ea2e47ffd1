//go:build unix

package archive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// htmlGen produces varied, realistic-looking HTML pages: Zipf-distributed
// words from a generated vocabulary (natural text compresses like this),
// navigation, tables, inline style and script, links with query strings.
type htmlGen struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newHTMLGen(seed uint64) *htmlGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syl := []string{"ka", "lo", "mi", "re", "sun", "ta", "ve", "dor", "en", "is", "qu", "pra", "tel", "ont", "ber", "gi", "ul", "ax", "ne", "so"}
	g := &htmlGen{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, 7999)}
	for i := 0; i < 8000; i++ {
		var b strings.Builder
		for n := 1 + rng.IntN(4); n > 0; n-- {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		g.vocab = append(g.vocab, b.String())
	}
	return g
}

func (g *htmlGen) words(b *strings.Builder, n int) {
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.vocab[g.zipf.Uint64()])
	}
}

// page returns a page of roughly size bytes.
func (g *htmlGen) page(host string, n, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
	g.words(&b, 4+g.rng.IntN(5))
	fmt.Fprintf(&b, "</title>\n<link rel=\"stylesheet\" href=\"/static/site.css?v=%d\">\n", g.rng.IntN(100))
	fmt.Fprintf(&b, "<style>.c%d{margin:0 %dpx;color:#%06x}</style>\n</head>\n<body>\n<nav><ul>\n", n%17, g.rng.IntN(20), g.rng.IntN(1<<24))
	for i := 0; i < 8+g.rng.IntN(12); i++ {
		fmt.Fprintf(&b, "<li><a href=\"http://%s/section/%d/item?id=%d\">", host, g.rng.IntN(50), g.rng.IntN(100000))
		g.words(&b, 1+g.rng.IntN(3))
		b.WriteString("</a></li>\n")
	}
	b.WriteString("</ul></nav>\n<main>\n")
	for b.Len() < size {
		switch g.rng.IntN(6) {
		case 0:
			b.WriteString("<h2>")
			g.words(&b, 3+g.rng.IntN(6))
			b.WriteString("</h2>\n")
		case 1:
			b.WriteString("<table class=\"data\">\n")
			for r := 0; r < 3+g.rng.IntN(6); r++ {
				fmt.Fprintf(&b, "<tr><td>%d</td><td>", g.rng.IntN(10000))
				g.words(&b, 2)
				fmt.Fprintf(&b, "</td><td>%d.%02d</td></tr>\n", g.rng.IntN(1000), g.rng.IntN(100))
			}
			b.WriteString("</table>\n")
		case 2:
			fmt.Fprintf(&b, "<p>See <a href=\"/doc/%d.html\">", g.rng.IntN(1000))
			g.words(&b, 2)
			fmt.Fprintf(&b, "</a> and <img src=\"/img/%x.png\" alt=\"", g.rng.Uint32())
			g.words(&b, 2)
			b.WriteString("\" width=\"120\" height=\"80\">.</p>\n")
		default:
			b.WriteString("<p>")
			g.words(&b, 40+g.rng.IntN(80))
			b.WriteString("</p>\n")
		}
	}
	fmt.Fprintf(&b, "</main>\n<footer>&copy; %s %d</footer>\n<script>var page=%d;</script>\n</body>\n</html>\n", host, 2000+n%26, n)
	return []byte(b.String())
}

// pages returns n pages of 10-30 KB.
func benchPages(n int) [][]byte {
	g := newHTMLGen(42)
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.page(fmt.Sprintf("h%d.example", i%13), i, 10<<10+g.rng.IntN(20<<10))
	}
	return out
}

// cpuTime returns the user+system CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRates reports ops per wall second under name, and ops per CPU
// second (all threads: the figure for one dedicated core, insensitive to
// other load on the machine).
func reportRates(b *testing.B, name string, cpu0 time.Duration) {
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), name+"/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), name+"/cpu-s")
	}
}

func benchCapture(i int, page []byte, at time.Time) Capture {
	return Capture{
		URL: fmt.Sprintf("http://h%d.example/section/%d/page%d.html", i%13, i%50, i), Time: at, Status: 200,
		Header: http.Header{
			"Content-Type":  {"text/html; charset=utf-8"},
			"Date":          {at.Format(http.TimeFormat)},
			"Last-Modified": {at.Add(-time.Hour).Format(http.TimeFormat)},
			"Etag":          {fmt.Sprintf(`"%x-%x"`, i, len(page))},
			"Server":        {"nginx/1.24.0"},
		},
		Body: page,
	}
}

// BenchmarkPut measures version additions (distinct pages of 10-30 KB):
// adds/s, with and without the per-file fsync, as gzip members at levels 6
// and 9 (a store without a dictionary) and as zstd frames with a trained
// dictionary (dict; the default store once it has 300 records).
func BenchmarkPut(b *testing.B) {
	pages := benchPages(256)
	for _, mode := range []struct {
		name   string
		noSync bool
		level  int
	}{{"fsync/gzip9", false, 9}, {"nosync/gzip9", true, 9}, {"fsync/gzip6", false, 6}, {"nosync/gzip6", true, 6},
		{"fsync/dict", false, 0}, {"nosync/dict", true, 0}} {
		b.Run(mode.name, func(b *testing.B) {
			s := openTest(b, Options{NoSync: mode.noSync, GzipLevel: mode.level, DictSamples: -1})
			if mode.level == 0 {
				withDict(b, s)
			}
			ctx := context.Background()
			var bytes int64
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				c := benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second))
				bytes += int64(len(c.Body))
				if _, added, err := s.Put(ctx, c); err != nil || !added {
					b.Fatalf("put: %v %v", added, err)
				}
			}
			reportRates(b, "adds", cpu0)
			b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "htmlMB/s")
		})
	}
}

// BenchmarkPutParallel measures additions from 8 concurrent writers (a
// crawler's workers) with syncs on: files and index are made durable a
// group at a time, with the default commit window and with none (a group
// syncs as soon as the previous one is done); gzip records, and zstd
// frames with a dictionary (window/dict).
func BenchmarkPutParallel(b *testing.B) {
	pages := benchPages(256)
	for _, mode := range []struct {
		name   string
		window time.Duration
		dict   bool
	}{{"window", 0, false}, {"nowindow", -1, false}, {"window/dict", 0, true}} {
		b.Run(mode.name, func(b *testing.B) {
			s := openTest(b, Options{CommitWindow: mode.window, DictSamples: -1})
			if mode.dict {
				withDict(b, s)
			}
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1))
					c := benchCapture(i, pages[i%len(pages)], t0.Add(time.Duration(i)*time.Second))
					if _, added, err := s.Put(ctx, c); err != nil || !added {
						b.Errorf("put: %v %v", added, err)
						return
					}
				}
			})
			reportRates(b, "adds", cpu0)
			b.ReportMetric(float64(groupCommits(s))/b.Elapsed().Seconds(), "groups/s")
		})
	}
}

// BenchmarkPutUnchanged measures a Put whose payload equals the stored one
// (the daily recrawl of a page that did not change).
func BenchmarkPutUnchanged(b *testing.B) {
	pages := benchPages(64)
	s := openTest(b, Options{DictSamples: -1})
	ctx := context.Background()
	for i := range pages {
		if _, _, err := s.Put(ctx, benchCapture(i, pages[i], t0)); err != nil {
			b.Fatal(err)
		}
	}
	before := s.Stats().Bytes
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		j := i % len(pages)
		if _, added, err := s.Put(ctx, benchCapture(j, pages[j], t0.Add(time.Duration(i+1)*time.Minute))); err != nil || added {
			b.Fatalf("unchanged put: %v %v", added, err)
		}
	}
	reportRates(b, "puts", cpu0)
	b.ReportMetric(float64(s.Stats().Bytes-before)/float64(b.N), "newbytes/op")
}

// BenchmarkAt measures dated lookups on a store of 2,000 URLs with 3
// versions each: the index lookup alone, and lookup plus verified read of
// the file.
func BenchmarkAt(b *testing.B) {
	pages := benchPages(128)
	s := openTest(b, Options{NoSync: true, DictSamples: -1})
	ctx := context.Background()
	const urls, versions = 2000, 3
	var us []string
	for i := 0; i < urls; i++ {
		for v := 0; v < versions; v++ {
			c := benchCapture(i, pages[(i+v)%len(pages)], t0.Add(time.Duration(v)*day))
			if _, _, err := s.Put(ctx, c); err != nil {
				b.Fatal(err)
			}
			if v == 0 {
				us = append(us, c.URL)
			}
		}
	}
	for _, read := range []bool{false, true} {
		name := "index"
		if read {
			name = "index+read"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				v, err := s.At(ctx, us[rng.IntN(len(us))], t0.Add(time.Duration(rng.IntN(3*24))*time.Hour))
				if err != nil {
					b.Fatal(err)
				}
				if read {
					if _, err := s.Read(ctx, v); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportRates(b, "lookups", cpu0)
		})
	}
}
