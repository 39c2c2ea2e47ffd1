package sampleweb

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, method, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestConditionalGET(t *testing.T) {
	w := startWeb(t, Config{Pages: 60})
	root := w.Seeds()[0]
	resp, body := get(t, "GET", root, nil)
	tag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp.StatusCode != 200 || tag != etag(body) || lm != w.LastModified(0).Format(http.TimeFormat) {
		t.Fatalf("GET / = %d, ETag %q (body %q), Last-Modified %q", resp.StatusCode, tag, etag(body), lm)
	}
	later := w.LastModified(3).Format(http.TimeFormat)
	earlier := time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	tests := []struct {
		name   string
		url    string
		method string
		header map[string]string
		want   int
	}{
		{"etag match", root, "GET", map[string]string{"If-None-Match": tag}, 304},
		{"etag in list", root, "GET", map[string]string{"If-None-Match": `"abc", ` + tag}, 304},
		{"weak etag match", root, "GET", map[string]string{"If-None-Match": "W/" + tag}, 304},
		{"star", root, "GET", map[string]string{"If-None-Match": "*"}, 304},
		{"etag mismatch", root, "GET", map[string]string{"If-None-Match": `"0000"`}, 200},
		{"etag mismatch wins over ims", root, "GET", map[string]string{"If-None-Match": `"0000"`, "If-Modified-Since": later}, 200},
		{"ims same", root, "GET", map[string]string{"If-Modified-Since": lm}, 304},
		{"ims later", root, "GET", map[string]string{"If-Modified-Since": later}, 304},
		{"ims earlier", root, "GET", map[string]string{"If-Modified-Since": earlier}, 200},
		{"head etag", root, "HEAD", map[string]string{"If-None-Match": tag}, 304},
		{"head", root, "HEAD", nil, 200},
		{"post", root, "POST", nil, 405},
		{"image etag", root + "img/logo.png", "GET", nil, 200},
		{"404 ignores etag", root + "missing/0.html", "GET", map[string]string{"If-None-Match": "*"}, 404},
		{"301 ignores ims", root + "moved.html", "GET", map[string]string{"If-Modified-Since": later}, 301},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, tt.method, tt.url, tt.header)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			// A 304 repeats the ETag; net/http drops Last-Modified from it
			// when an ETag is present, as RFC 9110 section 15.4.5 allows.
			if tt.want != 405 && (resp.Header.Get("ETag") == "" || (tt.want != 304 && resp.Header.Get("Last-Modified") == "")) {
				t.Errorf("missing validators: %v", resp.Header)
			}
			if tt.want == 304 && len(body) != 0 {
				t.Errorf("304 with %d body bytes", len(body))
			}
		})
	}
}

// TestConditionalAcrossDays finds a page that changes on day 2 and checks
// that its old validators get 200 on day 2 and 304 on day 1, and that an
// unchanged page answers 304 to day-1 validators on day 2.
func TestConditionalAcrossDays(t *testing.T) {
	w := startWeb(t, Config{Pages: 150, Seed: 5})
	changed := make(map[string]bool)
	for _, u := range w.NewVersions(2) {
		changed[u] = true
	}
	var changedURL, sameURL string
	for _, u := range w.Reachable(1) {
		if w.Status(1, u) != 200 {
			continue
		}
		if changed[u] && changedURL == "" {
			changedURL = u
		}
		if !changed[u] && sameURL == "" && strings.HasSuffix(u, ".html") {
			sameURL = u
		}
	}
	if changedURL == "" || sameURL == "" {
		t.Fatalf("no changed (%q) or unchanged (%q) page between days 1 and 2", changedURL, sameURL)
	}
	for _, tt := range []struct {
		url  string
		want int
	}{{changedURL, 200}, {sameURL, 304}} {
		w.SetDay(1)
		resp, body1 := get(t, "GET", tt.url, nil)
		tag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		w.SetDay(2)
		for _, h := range []map[string]string{{"If-None-Match": tag}, {"If-Modified-Since": lm}} {
			resp, body2 := get(t, "GET", tt.url, h)
			if resp.StatusCode != tt.want {
				t.Errorf("%s with %v on day 2: %d, want %d", tt.url, h, resp.StatusCode, tt.want)
			}
			if tt.want == 200 && (bytes.Equal(body1, body2) || resp.Header.Get("Last-Modified") != w.LastModified(2).Format(http.TimeFormat)) {
				t.Errorf("%s changed on day 2 but serves the same body or Last-Modified %s", tt.url, resp.Header.Get("Last-Modified"))
			}
		}
	}
}

func TestContentTypes(t *testing.T) {
	w := startWeb(t, Config{Pages: 30})
	root := w.Seeds()[0]
	tests := []struct {
		path, ctype, prefix string
		status              int
	}{
		{"", "text/html; charset=utf-8", "<!DOCTYPE html>", 200},
		{"news/6.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 200},
		{"img/logo.png", "image/png", "\x89PNG\r\n\x1a\n", 200},
		{"img/0.png", "image/png", "\x89PNG\r\n\x1a\n", 200},
		{"img/1.gif", "image/gif", "GIF89a", 200},
		{"img/2.svg", "image/svg+xml", "<svg ", 200},
		{"css/site.css", "text/css; charset=utf-8", "/*", 200},
		{"css/wiki.css", "text/css; charset=utf-8", "/*", 200},
		{"js/app.js", "text/javascript; charset=utf-8", "//", 200},
		{"js/shop.js", "text/javascript; charset=utf-8", "//", 200},
		{"robots.txt", "text/plain; charset=utf-8", "#", 200},
		{"private/1.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 200},
		{"search?q=x&lang=en", "text/html; charset=utf-8", "<!DOCTYPE html>", 200},
		{"news/6.html?session=1", "text/html; charset=utf-8", "<!DOCTYPE html>", 200},
		{"moved.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 301},
		{"missing/0.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 404},
		{"img/1.png", "text/html; charset=utf-8", "<!DOCTYPE html>", 404},
		{"news/7.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 404},
		{"news/06.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 404},
		{"news/100000.html", "text/html; charset=utf-8", "<!DOCTYPE html>", 404},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, "GET", root+tt.path, nil)
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.ctype || !bytes.HasPrefix(body, []byte(tt.prefix)) {
				t.Errorf("%d %q %.20q, want %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status, tt.ctype, tt.prefix)
			}
		})
	}
	resp, _ := get(t, "GET", root+"moved.html", nil)
	if loc := resp.Header.Get("Location"); loc != root+strings.TrimPrefix(pagePath(w.m.movedTarget(0)), "/") {
		t.Errorf("redirect to %q", loc)
	}
}

func TestRobotsTxt(t *testing.T) {
	const base = "# sample web robots.txt\nUser-agent: *\nDisallow: /private/\n"
	const banned = "\nUser-agent: herod-test-banned\nDisallow: /\n"
	tests := []struct {
		name    string
		cfg     Config
		status  int
		body    string
		private bool // a robots-obeying crawl fetches /private/ pages
		none    bool // a robots-obeying crawl fetches nothing
	}{
		{"default", Config{}, 200, base + banned, false, false},
		{"crawl delay", Config{CrawlDelay: 3}, 200, base + "Crawl-delay: 3\n" + banned, false, false},
		{"not found allows all", Config{RobotsStatus: 404}, 404, "Not Found\n", true, false},
		{"forbidden allows all", Config{RobotsStatus: 403}, 403, "Forbidden\n", true, false},
		{"unavailable disallows all", Config{RobotsStatus: 503}, 503, "Service Unavailable\n", false, true},
		{"bogus status is 200", Config{RobotsStatus: 302}, 200, base + banned, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Pages = 45
			w := startWeb(t, tt.cfg)
			for _, s := range w.Seeds() {
				resp, body := get(t, "GET", s+"robots.txt", nil)
				if resp.StatusCode != tt.status || string(body) != tt.body {
					t.Errorf("%srobots.txt = %d %q, want %d %q", s, resp.StatusCode, body, tt.status, tt.body)
				}
			}
			got := keys(newTestCrawler(t).crawl(w.Seeds(), false))
			diff(t, "Reachable", got, w.Reachable(0))
			private := false
			for _, u := range got {
				private = private || strings.Contains(u, disallowed)
			}
			if private != tt.private || (len(got) == 0) != tt.none {
				t.Errorf("crawl of %d URLs: private pages %v, want %v; empty %v", len(got), private, tt.private, tt.none)
			}
		})
	}
}

func TestRequestLogBound(t *testing.T) {
	tests := []struct {
		max, n, want int
	}{
		{4, 3, 3},
		{4, 4, 4},
		{4, 5, 3},
		{4, 7, 3},
		{-1, 5, 0},
	}
	for _, tt := range tests {
		w := startWeb(t, Config{Pages: 10, MaxRequests: tt.max})
		for i := range tt.n {
			get(t, "GET", w.Seeds()[0]+"missing/"+string(rune('0'+i))+".html", nil)
		}
		reqs := w.Requests()
		if len(reqs) != tt.want {
			t.Errorf("max %d after %d requests: kept %d, want %d", tt.max, tt.n, len(reqs), tt.want)
		}
		if tt.want > 0 && reqs[len(reqs)-1].Path != "/missing/"+string(rune('0'+tt.n-1))+".html" {
			t.Errorf("max %d: latest request %q missing", tt.max, reqs[len(reqs)-1].Path)
		}
	}
}

// BenchmarkServe fetches every URL reachable on day 1 once per iteration,
// sequentially, to show the sample web is not what limits a crawl.
func BenchmarkServe(b *testing.B) {
	w := New(Config{})
	if err := w.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	w.SetDay(1)
	urls := w.Reachable(1)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, u := range urls {
			resp, err := client.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.ReportMetric(float64(len(urls)*b.N)/time.Since(start).Seconds(), "req/s")
}
