package gatewaytest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkFramingCost measures what framing costs the gateway per page
// view (issue 18), in one run against its base, the single-origin
// gateway of TestReplayLatency (the page with its banner and the dates
// on one origin, as before framing):
//
//   - single: /web/<ts>/<url> answered with the page itself;
//   - framed: the framed page from the UI origin, then the frame's
//     document from the content origin (a reader's first replay);
//   - worker: /api/banner from the UI origin and the frame's document (a
//     replay the service worker wrote the framed page of: every later one).
//
// "doc" views ask for the documents alone, "page" views also for every
// embedded object of the replayed page (one at a time, as a first visit
// would, but for the gateway's own scripts, which browsers cache). Serial
// runs report the latency of a view (p50-ms, p99-ms) and the requests it
// took (req/view); parallel runs (8 readers) report views/s and req/s.
func BenchmarkFramingCost(b *testing.B) {
	m, pages := benchPages(b)
	single := singleOriginServer(b, m, listen(b), "")
	framed := replayServers(b, m)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const ts = "20240102"
	src := frameSrc.FindStringSubmatch(string(fetch(b, client, framed+"/web/"+ts+"/"+pages[0])))
	if src == nil {
		b.Fatal("the framed page has no content frame")
	}
	content := src[1][:strings.Index(src[1], "/web/")]
	// Each variant's view returns the requests it made.
	type variant struct {
		name string
		view func(page string, objects bool) int
	}
	variants := []variant{
		{"single", func(p string, objects bool) int {
			return viewRequests(b, client, single+"/web/"+ts+"/"+p, objects)
		}},
		{"framed", func(p string, objects bool) int {
			return viewRequests(b, client, framed+"/web/"+ts+"/"+p, objects)
		}},
		{"worker", func(p string, objects bool) int {
			fetch(b, client, framed+"/api/banner?url="+url.QueryEscape(p)+"&ts="+ts)
			return 1 + viewRequests(b, client, content+"/web/"+ts+"/"+p, objects)
		}},
	}
	for i := range pages { // warm connections and caches
		for _, v := range variants {
			v.view(pages[i], true)
		}
	}
	for _, objects := range []bool{false, true} {
		kind := "doc"
		if objects {
			kind = "page"
		}
		for _, v := range variants {
			b.Run(kind+"/"+v.name+"/serial", func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				reqs := 0
				for i := 0; i < b.N; i++ {
					start := time.Now()
					reqs += v.view(pages[i%len(pages)], objects)
					lat = append(lat, time.Since(start))
				}
				slices.Sort(lat)
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
				b.ReportMetric(float64(reqs)/float64(b.N), "req/view")
			})
			b.Run(kind+"/"+v.name+"/parallel", func(b *testing.B) {
				b.SetParallelism(4) // 4 × GOMAXPROCS readers
				var next, reqs atomicCounter
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n := v.view(pages[next.add()%len(pages)], objects)
						reqs.n.Add(int64(n))
					}
				})
				wall := time.Since(start).Seconds()
				b.ReportMetric(float64(b.N)/wall, "views/s")
				b.ReportMetric(float64(reqs.n.Load())/wall, "req/s")
			})
		}
	}
}

// viewRequests opens url as view does and returns the requests it took:
// the page, the frame's document when the page is a framed replay, and,
// with objects, every embedded object of the replayed document.
func viewRequests(tb testing.TB, client *http.Client, url string, objects bool) int {
	body := fetch(tb, client, url)
	n := 1
	origin := url[:strings.Index(url, "/web/")]
	if m := frameSrc.FindSubmatch(body); m != nil {
		src := strings.ReplaceAll(string(m[1]), "&amp;", "&")
		origin = src[:strings.Index(src, "/web/")]
		body = fetch(tb, client, src)
		n++
	}
	if objects {
		for _, m := range embedded.FindAllSubmatch(body, -1) {
			fetch(tb, client, origin+strings.ReplaceAll(string(m[1]), "&amp;", "&"))
			n++
		}
	}
	return n
}
