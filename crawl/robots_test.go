package crawl

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRobots(t *testing.T) {
	big := "User-agent: *\n" + strings.Repeat("Allow: /ok\n", RobotsMaxBytes/11) + "Disallow: /late\n"
	tests := []struct {
		name   string
		status int
		body   string
		allow  []string
		deny   []string
		delay  time.Duration
	}{
		{name: "404 allows all", status: 404, allow: []string{"/", "/x"}},
		{name: "403 allows all", status: 403, body: "User-agent: *\nDisallow: /", allow: []string{"/x"}},
		{name: "429 disallows all", status: 429, deny: []string{"/", "/x"}},
		{name: "500 disallows all", status: 500, deny: []string{"/"}},
		{name: "unreachable disallows all", status: 0, deny: []string{"/"}},
		{name: "empty file", status: 200, allow: []string{"/x"}},
		{name: "star group", status: 200, body: "User-agent: *\nDisallow: /private\n", allow: []string{"/", "/public"}, deny: []string{"/private", "/private/x"}},
		{name: "own group wins", status: 200, body: "User-agent: *\nDisallow: /\n\nUser-agent: herod\nDisallow: /nope\nCrawl-delay: 2.5\n",
			allow: []string{"/", "/yes"}, deny: []string{"/nope"}, delay: 2500 * time.Millisecond},
		{name: "other agent ignored", status: 200, body: "User-agent: otherbot\nDisallow: /\n", allow: []string{"/"}},
		{name: "longest match", status: 200, body: "User-agent: *\nDisallow: /a\nAllow: /a/b\n", allow: []string{"/a/b/c"}, deny: []string{"/a/x"}},
		{name: "empty disallow ends group", status: 200, body: "User-agent: herod\nDisallow:\nUser-agent: other\nDisallow: /\n", allow: []string{"/x"}},
		{name: "star path", status: 200, body: "User-agent: *\nDisallow: *\n", deny: []string{"/x"}},
		{name: "wildcard", status: 200, body: "User-agent: *\nDisallow: /*.gif$\n", allow: []string{"/a.png"}, deny: []string{"/a.gif"}},
		{name: "query", status: 200, body: "User-agent: *\nDisallow: /s?q=\n", allow: []string{"/s"}, deny: []string{"/s?q=1"}},
		{name: "lenient", status: 200, body: "\xef\xbb\xbfDisallow: /before\nUser-agent: * # all\nCrawl-delay: soon\nCrawl-delay: -1\nDisallow: /x junk # c\nnonsense line\n",
			allow: []string{"/before", "/y"}, deny: []string{"/x"}},
		{name: "CR line ends", status: 200, body: "User-agent: *\rDisallow: /cr\r", deny: []string{"/cr"}},
		{name: "robots.txt always allowed", status: 200, body: "User-agent: *\nDisallow: /\n", allow: []string{"/robots.txt"}, deny: []string{"/x"}},
		{name: "500 KiB limit", status: 200, body: big, allow: []string{"/late"}},
		{name: "huge delay clamped", status: 200, body: "User-agent: *\nCrawl-delay: 1e300\n", delay: 24 * time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ParseRobots(RobotsRecord{Status: tc.status, Body: []byte(tc.body)}, "herod")
			for _, p := range tc.allow {
				if !r.Allowed(p) {
					t.Errorf("%s disallowed", p)
				}
			}
			for _, p := range tc.deny {
				if r.Allowed(p) {
					t.Errorf("%s allowed", p)
				}
			}
			if d := r.CrawlDelay(); d != tc.delay {
				t.Errorf("crawl delay %v, want %v", d, tc.delay)
			}
		})
	}
}

func TestCrawlObeysRobots(t *testing.T) {
	pages := map[string]string{"/": links(nil, "/private/a", "/public", "/private"), "/public": "p", "/private": "x", "/private/a": "x"}
	tests := []struct {
		name    string
		robots  *page
		fetched []string
		denied  int64
		warn    bool // the refusal is logged as a warning (robots.txt failed), not as obeying it
	}{
		{name: "rules", robots: &page{status: 200, body: "User-agent: *\nDisallow: /private\n"}, fetched: []string{"/", "/public"}, denied: 2},
		{name: "404 allows", robots: nil, fetched: []string{"/", "/public", "/private", "/private/a"}},
		{name: "410 allows", robots: &page{status: 410}, fetched: []string{"/", "/public", "/private", "/private/a"}},
		{name: "503 disallows", robots: &page{status: 503, body: "down"}, fetched: nil, denied: 1, warn: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, pages)
			s.robots = tc.robots
			var logs syncBuffer
			cfg := testConfig(newClock())
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
			if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, c)
			got := map[string]bool{}
			for _, r := range s.requests("") {
				if r.path != "/robots.txt" {
					got[r.path] = true
				}
			}
			if len(got) != len(tc.fetched) {
				t.Fatalf("fetched %v, want %v", got, tc.fetched)
			}
			for _, p := range tc.fetched {
				if !got[p] {
					t.Fatalf("fetched %v, want %v", got, tc.fetched)
				}
			}
			if n := len(s.requests("/robots.txt")); n != 1 {
				t.Fatalf("robots.txt fetched %d times", n)
			}
			if d := c.Stats().ErrorsByKind[KindRobots]; d != tc.denied {
				t.Fatalf("robots refusals %d, want %d", d, tc.denied)
			}
			warned := strings.Contains(logs.String(), "level=WARN")
			if tc.denied > 0 && warned != tc.warn {
				t.Errorf("refusal logged as a warning: %v, want %v; log:\n%s", warned, tc.warn, logs.String())
			}
		})
	}
}

// countingSource is a RobotsSource that forwards to another crawler's
// cache, as a node does when it asks the robots.txt owner.
type countingSource struct {
	owner *Crawler
	calls atomic.Int64
}

func (s *countingSource) Robots(ctx context.Context, origin string) (RobotsRecord, error) {
	s.calls.Add(1)
	return s.owner.RobotsRecord(ctx, origin)
}

func TestRobotsSharedThroughOwner(t *testing.T) {
	pages := map[string]string{"/": links(nil, "/a", "/b", "/c"), "/a": "a", "/b": "b", "/c": "c"}
	s := newSite(t, pages)
	s.robots = &page{status: 200, body: "User-agent: *\nDisallow: /c\n"}
	clock := newClock()
	owner, _ := startCrawler(t, t.TempDir(), testConfig(clock), newMemArchive())
	var crawlers []*Crawler
	crawlers = append(crawlers, owner)
	for range 3 {
		cfg := testConfig(clock)
		cfg.Robots = &countingSource{owner: owner}
		c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
		crawlers = append(crawlers, c)
	}
	for _, c := range crawlers[1:] {
		if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range crawlers {
		waitIdle(t, c)
	}
	if n := len(s.requests("/robots.txt")); n != 1 {
		t.Fatalf("robots.txt fetched %d times by 3 crawlers and the owner, want 1", n)
	}
	if n := len(s.requests("/c")); n != 0 {
		t.Fatalf("disallowed /c fetched %d times", n)
	}
	// A day later every cache has expired: the owner fetches once more,
	// for all of them.
	clock.Add(25 * time.Hour)
	for _, c := range crawlers {
		if _, err := c.robots.record(context.Background(), s.url("")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.requests("/robots.txt")); n != 2 {
		t.Fatalf("robots.txt fetched %d times over two days, want 2", n)
	}
}

func TestCrawlDelaySlowsHost(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	s := newSite(t, map[string]string{"/": links(nil, "/1", "/2", "/3"), "/1": "1", "/2": "2", "/3": "3"})
	s.robots = &page{status: 200, body: "User-agent: herod\nCrawl-delay: 0.05\n"}
	c, _ := startCrawler(t, t.TempDir(), testConfig(newClock()), newMemArchive())
	start := time.Now()
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	// The first page waits the delay after robots.txt too.
	checkSpacing(t, start, s.requests(""), 50*time.Millisecond)
}

func TestHostRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	pages := map[string]string{"/": links(nil, "/1", "/2", "/3", "/4", "/5")}
	for _, p := range []string{"/1", "/2", "/3", "/4", "/5"} {
		pages[p] = p
	}
	s := newSite(t, pages)
	cfg := testConfig(newClock())
	cfg.HostRate = 25
	cfg.HostConns = 4
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	start := time.Now()
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	checkSpacing(t, start, s.requests(""), 40*time.Millisecond)
}

// checkSpacing asserts that requests (robots.txt included) were paced by
// the budget: the limiter releases them at least gap apart, and a request
// arrives after its release, never before. So the last of n requests
// arrives at least (n-1)*gap after the test started, however loaded the
// machine is (arrival timestamps on a loaded machine can bunch, so the
// gaps between single arrivals prove nothing).
func checkSpacing(t *testing.T, start time.Time, rs []request, gap time.Duration) {
	t.Helper()
	if len(rs) < 3 {
		t.Fatalf("only %d requests", len(rs))
	}
	span := rs[len(rs)-1].at.Sub(start)
	if min := time.Duration(len(rs)-1) * gap; span < min {
		for _, r := range rs {
			t.Logf("%s %s", r.at.Format("15:04:05.000000"), r.path)
		}
		t.Fatalf("%d requests in %v, want at least %v", len(rs), span, min)
	}
}

func TestSharedBudgetLimit(t *testing.T) {
	n := 4
	b := NewSharedBudget(2, func() int { return n }, nil)
	tests := []struct {
		nodes int
		delay time.Duration
		want  float64
	}{
		{1, 0, 2}, {4, 0, 0.5}, {0, 0, 2}, {4, 10 * time.Second, 0.025}, {1, 10 * time.Second, 0.1}, {1, 100 * time.Millisecond, 2},
	}
	for _, tc := range tests {
		n = tc.nodes
		if got := float64(b.Limit(tc.delay)); got != tc.want {
			t.Errorf("nodes %d delay %v: limit %v, want %v", tc.nodes, tc.delay, got, tc.want)
		}
	}
}

func FuzzParseRobots(f *testing.F) {
	for _, s := range []string{
		"", "User-agent: *\nDisallow: /", "Disallow: /x\nUser-agent: a\nCrawl-delay: x",
		"User-agent: herod\nAllow: /*?$\nDisallow: /a*b$\nCrawl-delay: 1e400",
		"\xef\xbb\xbfuser-agent:*\r\ndisallow:\r\n", "User-agent: *\nDisallow: /[\n", "Sitemap: http://x/s.xml\nHost: x",
	} {
		f.Add(s, "/a?b")
	}
	seeds, _ := filepath.Glob("testdata/robots/*.txt")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "/search/about?sid=1")
	}
	f.Fuzz(func(t *testing.T, body, path string) {
		clean := sanitizeRobots([]byte(body))
		if _, err := robotstxtFromBytes(clean); err != nil {
			t.Fatalf("sanitized robots.txt refused: %v\n%q", err, clean)
		}
		r := ParseRobots(RobotsRecord{Status: 200, Body: []byte(body)}, "herod")
		r.Allowed(path)
		if d := r.CrawlDelay(); d < 0 || d > 24*time.Hour {
			t.Fatalf("delay %v", d)
		}
	})
}

func TestParseRobotsFiles(t *testing.T) {
	tests := []struct {
		file, agent string
		allow, deny []string
		delay       time.Duration
	}{
		{"google-style.txt", "herod", []string{"/search", "/x"}, []string{"/private/a"}, 0},
		{"google-style.txt", "somebot", []string{"/search/about", "/x?a=1"}, []string{"/search", "/x?sid=2"}, 1500 * time.Millisecond},
		{"crlf-and-junk.txt", "herod", []string{"/a", "/b/c"}, []string{"/b"}, 0},
		{"crlf-and-junk.txt", "somebot", []string{"/b"}, []string{"/a"}, 0},
	}
	for _, tc := range tests {
		b, err := os.ReadFile(filepath.Join("testdata/robots", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		r := ParseRobots(RobotsRecord{Status: 200, Body: b}, tc.agent)
		for _, p := range tc.allow {
			if !r.Allowed(p) {
				t.Errorf("%s/%s: %s disallowed", tc.file, tc.agent, p)
			}
		}
		for _, p := range tc.deny {
			if r.Allowed(p) {
				t.Errorf("%s/%s: %s allowed", tc.file, tc.agent, p)
			}
		}
		if d := r.CrawlDelay(); d != tc.delay {
			t.Errorf("%s/%s: delay %v, want %v", tc.file, tc.agent, d, tc.delay)
		}
	}
}

func TestSameRobots(t *testing.T) {
	file := func(body string) RobotsRecord { return RobotsRecord{Status: 200, Body: []byte(body)} }
	for _, c := range []struct {
		a, b RobotsRecord
		same bool
	}{
		{file("User-agent: *\nDisallow: /a\n"), file("# c\nuser-agent: *   \r\ndisallow: /a # x\n"), true},
		{file("User-agent: *\nDisallow: /a\n"), file("User-agent: *\nDisallow: /b\n"), false},
		{file("User-agent: *\nDisallow: /a\n"), RobotsRecord{Status: 404}, false},
		{RobotsRecord{Status: 404}, RobotsRecord{Status: 410}, true},
		{RobotsRecord{Status: 503}, RobotsRecord{Status: 0}, true},
		{RobotsRecord{Status: 429}, RobotsRecord{Status: 404}, false},
		{file(""), RobotsRecord{Status: 404}, false},
	} {
		if got := SameRobots(c.a, c.b); got != c.same {
			t.Errorf("SameRobots(%d %q, %d %q) = %v", c.a.Status, c.a.Body, c.b.Status, c.b.Body, got)
		}
	}
}
