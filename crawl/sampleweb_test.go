package crawl

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/racebuild"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// TestSampleWebTwoDays crawls the sample web (3 hosts, 600 pages; 90 under
// the race detector) on day
// 0 and day 1 with one crawler and checks the result against the web's
// own model: what is stored on day 0 is every reachable URL that does not
// answer 404; on day 1 the new versions are exactly the model's, and
// everything else was a 304 (or, for redirects, which carry no
// validators, an unchanged 200); robots.txt was obeyed and fetched once per
// host per day.
func TestSampleWebTwoDays(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls 1,000+ URLs twice")
	}
	cfgWeb := sampleweb.Config{} // 3 hosts, 600 pages
	if racebuild.Enabled {
		cfgWeb.Pages = 90
	}
	web := sampleweb.New(cfgWeb)
	if err := web.Start(context.Background()); err != nil {
		t.Skipf("sample web cannot listen on 127.0.0.2-4: %v", err)
	}
	t.Cleanup(func() { web.Close() })
	clock := newClock()
	cfg := testConfig(clock)
	cfg.Timeout = 10 * time.Second
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	ctx := context.Background()

	checkRequests := func(day int) {
		t.Helper()
		robots := map[string]int{}
		for _, r := range web.Requests() {
			if strings.HasPrefix(r.Path, "/private/") {
				t.Fatalf("day %d: disallowed %s%s fetched", day, r.Host, r.Path)
			}
			if r.Path == "/robots.txt" {
				robots[r.Host]++
			}
			if r.UserAgent != DefaultUserAgent {
				t.Fatalf("day %d: User-Agent %q", day, r.UserAgent)
			}
		}
		for h, n := range robots {
			if n != 1 {
				t.Fatalf("day %d: robots.txt of %s fetched %d times", day, h, n)
			}
		}
	}

	start := time.Now()
	if err := c.Add(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	d0 := time.Since(start)
	want := web.Reachable(0) // every answer is stored, 404s too
	if got := a.urls(); !slices.Equal(got, want) {
		t.Fatalf("day 0: stored %d URLs, model says %d\nmissing %v\nextra %v", len(got), len(want), minus(want, got), minus(got, want))
	}
	checkRequests(0)
	t.Logf("day 0: %d URLs stored in %v (%.0f/s), stats %+v", len(want), d0, float64(len(want))/d0.Seconds(), c.Stats())

	web.SetDay(1)
	web.ResetRequests()
	before := map[string]int{}
	for _, u := range a.urls() {
		before[u] = a.count(u)
	}
	// The archive's robots cache lives for a day: the new day refetches it.
	clock.Add(24 * time.Hour)
	start = time.Now()
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	d1 := time.Since(start)
	var changed []string
	for _, u := range a.urls() {
		if a.count(u) > before[u] {
			changed = append(changed, u)
		}
	}
	wantNew := web.NewVersions(1)
	if !slices.Equal(changed, wantNew) {
		t.Fatalf("day 1: %d new versions, model says %d\nmissing %v\nextra %v", len(changed), len(wantNew), minus(wantNew, changed), minus(changed, wantNew))
	}
	checkRequests(1)
	// Redirects and 404s carry no validators: they are fetched again in
	// full and, unless they changed, found unchanged. Everything else
	// known answers 304.
	var noValidators int64
	for _, u := range web.Reachable(0) {
		if _, isNew := slices.BinarySearch(wantNew, u); web.Status(1, u) >= 300 && !isNew {
			noValidators++
		}
	}
	st := c.Stats()
	if st.NewVersions != int64(len(wantNew)) || st.Unchanged != noValidators {
		t.Fatalf("day 1 stats %+v, want %d new versions and %d unchanged (redirects and 404s)", st, len(wantNew), noValidators)
	}
	t.Logf("day 1: %d new versions, %d not modified, in %v, stats %+v", len(changed), st.NotModified, d1, st)
}

// minus returns the sorted elements of a absent from b (both sorted).
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
		}
	}
	return out
}
