package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive/access"
)

// benchRules returns n rules over other hosts, as a node holding a large
// takedown list would, plus one block on the benchmark's own host that
// leaves its captures shown (before 2000).
func benchRules(n int) []access.Rule {
	rs := make([]access.Rule, 0, n+1)
	for i := range n {
		r := access.Rule{URL: fmt.Sprintf("http://host%d.example.org/path%d/", i%997, i), Action: access.Block}
		if i%10 == 0 {
			r.Exact = true
		}
		rs = append(rs, r)
	}
	return append(rs, access.Rule{SURT: "com,example)/", Action: access.Block, Before: at("20000101000000")})
}

// BenchmarkAccessCost measures, in one run, a replay (id_) and a CDX
// query of 1,000 rows on two gateways over one archive: without access
// rules and with 10,000 of them. It reports each one's p50 replay time,
// CDX rows per second, and the ratios rules/none:
//
//	go test -run '^$' -bench AccessCost -benchtime 300x ./gateway/
func BenchmarkAccessCost(b *testing.B) {
	f := newFake()
	for i := range 1000 {
		f.add(b, fmt.Sprintf("http://example.com/p%04d", i), "20210101000000", 200, "text/html", strings.Repeat("x", 2048))
	}
	arch := &listingArchive{fakeArchive: f}
	unpaced := func(c *Config) { c.Limits.ExportRate = -1 } // the CDX answers are paced by default
	none := newServer(b, arch, unpaced)
	ruled := newServer(b, arch, unpaced, func(c *Config) { c.Access = newTableAccess(c.Now, benchRules(10000)...) })
	servers := []*Server{none, ruled}
	replay := make([][]time.Duration, 2)
	cdx := make([]time.Duration, 2)
	rows := 0
	for i := 0; b.Loop(); i++ {
		target := fmt.Sprintf("/web/20210101000000id_/http://example.com/p%04d", i%1000)
		for j := range servers {
			k := (i + j) % 2 // alternate which goes first
			s := servers[k]
			t0 := time.Now()
			w := get(b, s, target)
			replay[k] = append(replay[k], time.Since(t0))
			if w.Code != http.StatusOK {
				b.Fatalf("replay %s: %d", target, w.Code)
			}
			t0 = time.Now()
			w = get(b, s, "/cdx?url=http://example.com/&matchType=prefix&limit=1000")
			cdx[k] += time.Since(t0)
			lines := strings.Count(w.Body.String(), "\n")
			if w.Code != 200 || lines != 1000 {
				b.Fatalf("cdx: %d, %d rows", w.Code, lines)
			}
			if k == 0 {
				rows += lines
			}
		}
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	p0, p1 := p50(replay[0]), p50(replay[1])
	r0, r1 := float64(rows)/cdx[0].Seconds(), float64(rows)/cdx[1].Seconds()
	b.ReportMetric(p0, "replay-p50-µs-none")
	b.ReportMetric(p1, "replay-p50-µs-rules")
	b.ReportMetric(p1/p0, "replay-p50-ratio")
	b.ReportMetric(r0, "cdx-rows/s-none")
	b.ReportMetric(r1, "cdx-rows/s-rules")
	b.ReportMetric(r1/r0, "cdx-rows/s-ratio")
}
