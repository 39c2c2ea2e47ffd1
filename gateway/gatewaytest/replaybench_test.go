package gatewaytest

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// This file measures replay as a reader's browser sees it, through real
// HTTP, whatever the gateway's shape: it only asks the URL a reader opens
// and, when the answer is a framed replay page, the frame's document too.
// It depends on nothing else of the gateway's API but replayServers
// (replaybench_setup_test.go), so that scripts/bench-replay.sh can run the
// same benchmark on an older commit with a setup of that commit's API.

// benchPages archives day 0 of the sample web into a Mem (fetched over
// loopback, as the crawler would) and returns it with its HTML pages.
func benchPages(tb testing.TB) (*Mem, []string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Pages: 120, MaxRequests: -1})
	if err := web.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	defer web.Close()
	m := NewMem()
	day0 := time.Date(2024, 1, 1, 6, 0, 0, 0, time.UTC)
	var pages []string
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, u := range web.Reachable(0) {
		resp, err := client.Get(u)
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if err := m.Add(ctx, &archive.Capture{URL: u, Time: day0, Status: resp.StatusCode, Header: resp.Header, Body: body}); err != nil {
			tb.Fatal(err)
		}
		if resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			pages = append(pages, u)
		}
	}
	return m, pages
}

// frameSrc finds the content frame of a framed replay page.
var frameSrc = regexp.MustCompile(`<iframe id="herod-frame"[^>]* src="([^"]+)"`)

// embedded finds the archive paths of a replayed document's embedded
// objects: images, scripts, stylesheets.
var embedded = regexp.MustCompile(`<(?:img|script|link)\s[^>]*?(?:src|href)="(/web/[^"]+)"`)

// view opens url as a browser would and returns the bytes it got: the
// page, the frame's document when the page is a framed replay, and, with
// objects, every embedded object of the replayed document (one at a time;
// the gateway's own scripts, cached by a browser, are not counted).
func view(tb testing.TB, client *http.Client, url string, objects bool) int {
	body := fetch(tb, client, url)
	n := len(body)
	origin := url[:strings.Index(url, "/web/")]
	if m := frameSrc.FindSubmatch(body); m != nil {
		src := strings.ReplaceAll(string(m[1]), "&amp;", "&")
		origin = src[:strings.Index(src, "/web/")]
		body = fetch(tb, client, src)
		n += len(body)
	}
	if objects {
		for _, m := range embedded.FindAllSubmatch(body, -1) {
			n += len(fetch(tb, client, origin+strings.ReplaceAll(string(m[1]), "&amp;", "&")))
		}
	}
	return n
}

func fetch(tb testing.TB, client *http.Client, url string) []byte {
	resp, err := client.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: %d %v", url, resp.StatusCode, err)
	}
	return body
}

// BenchmarkReplayView measures a reader's view of an archived page: one
// op opens /web/<ts>/<url> of a sample web page and its frame's document,
// when the gateway frames replays ("doc"), and then every embedded object
// of the page ("page": a first visit, nothing cached but the gateway's
// scripts). Each is run serially (latency: ms/view) and by 8 readers at
// once (throughput: views/s).
func BenchmarkReplayView(b *testing.B) {
	m, pages := benchPages(b)
	entry := replayServers(b, m)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	url := func(i int) string { return entry + "/web/20240102/" + pages[i%len(pages)] }
	for i := range pages { // warm connections and caches
		view(b, client, url(i), true)
	}
	for _, objects := range []bool{false, true} {
		name := "doc"
		if objects {
			name = "page"
		}
		b.Run(name+"/serial", func(b *testing.B) {
			start, cpu := time.Now(), cpuTime(b)
			for i := 0; i < b.N; i++ {
				view(b, client, url(i), objects)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/view")
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-us/view")
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.SetParallelism(4) // 4 × GOMAXPROCS readers
			start, cpu := time.Now(), cpuTime(b)
			var next atomicCounter
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					view(b, client, url(next.add()), objects)
				}
			})
			wall := time.Since(start)
			b.ReportMetric(float64(b.N)/wall.Seconds(), "views/s")
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(wall), "cores")
		})
	}
}

// atomicCounter hands out increasing ints to parallel benchmark loops.
type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add() int { return int(c.n.Add(1)) }

// cpuTime returns the CPU time this process (gateway and readers alike)
// has used: a cost per view that other processes on a shared machine
// disturb less than the wall clock.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
