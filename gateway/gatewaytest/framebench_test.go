package gatewaytest

import (
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// took (req/view); parallel runs (8 readers) report views/s and req/s;
// each metric is prefixed with its variant's name. The pages are those of
// TestReplayLatency (HEROD_LATENCY_SITE): the sample web's, with 7.5
// small objects each, or the fidelity site's, built like real ones.
func BenchmarkFramingCost(b *testing.B) {
	m, pages, _ := latencyPages(b)
	single := singleOriginServer(b, m, listen(b), "")
	framed := replayServers(b, m)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ts := time.Now().UTC().AddDate(0, 0, 1).Format("20060102") // after every capture
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
		// The variants take turns within each op, so that all of them
		// meet the same machine (a shared one: others' load comes and
		// goes). Metrics are named <variant>-<metric>.
		b.Run(kind+"/serial", func(b *testing.B) {
			lat := make([][]time.Duration, len(variants))
			reqs := make([]int, len(variants))
			for i := 0; i < b.N; i++ {
				for k := range variants {
					w := (i + k) % len(variants)
					start := time.Now()
					reqs[w] += variants[w].view(pages[i%len(pages)], objects)
					lat[w] = append(lat[w], time.Since(start))
				}
			}
			// A view's cost against the single-origin view of the same
			// page in the same op: the median of these ratios is what the
			// machine's load, which changes from op to op, skews least.
			for w, v := range variants[1:] {
				b.ReportMetric(pairedMedian(lat[w+1], lat[0]), v.name+"/single-paired")
			}
			for w, v := range variants {
				slices.Sort(lat[w])
				b.ReportMetric(ms(lat[w][len(lat[w])/2]), v.name+"-p50-ms")
				b.ReportMetric(ms(lat[w][len(lat[w])*99/100]), v.name+"-p99-ms")
				b.ReportMetric(float64(reqs[w])/float64(b.N), v.name+"-req/view")
			}
		})
		b.Run(kind+"/parallel", func(b *testing.B) {
			// Each op: every variant in turn, 8 readers at once
			// (4 × GOMAXPROCS on two cores), 4 views each.
			readers := 4 * runtime.GOMAXPROCS(0)
			const each = 4
			wall := make([]time.Duration, len(variants))
			ops := make([][]time.Duration, len(variants)) // each op's wall time
			reqs := make([]int64, len(variants))
			var next atomicCounter
			for i := 0; i < b.N; i++ {
				for k := range variants {
					w := (i + k) % len(variants)
					var wg sync.WaitGroup
					var n atomic.Int64
					start := time.Now()
					for range readers {
						wg.Go(func() {
							for range each {
								n.Add(int64(variants[w].view(pages[next.add()%len(pages)], objects)))
							}
						})
					}
					wg.Wait()
					ops[w] = append(ops[w], time.Since(start))
					wall[w] += ops[w][i]
					reqs[w] += n.Load()
				}
			}
			// views/s against single's in the same op (the inverse of
			// the ratio of their wall times), median over ops.
			for w, v := range variants[1:] {
				b.ReportMetric(1/pairedMedian(ops[w+1], ops[0]), v.name+"/single-paired-views/s")
			}
			for w, v := range variants {
				b.ReportMetric(float64(b.N*readers*each)/wall[w].Seconds(), v.name+"-views/s")
				b.ReportMetric(float64(reqs[w])/wall[w].Seconds(), v.name+"-req/s")
			}
		})
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

// pairedMedian returns the median over i of a[i]/b[i].
func pairedMedian(a, b []time.Duration) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = float64(a[i]) / float64(b[i])
	}
	slices.Sort(r)
	return r[len(r)/2]
}
