package crawl

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNoArchive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
		ctype  string
		body   string
		want   bool
	}{
		{"header", []string{"noarchive"}, "text/html", "<p>x", true},
		{"header list", []string{"noindex, NoArchive"}, "image/png", "", true},
		{"header second value", []string{"nofollow", "noarchive"}, "text/plain", "", true},
		{"header for herod", []string{"herod: noarchive"}, "text/plain", "", true},
		{"header for another bot", []string{"googlebot: noarchive"}, "text/plain", "", false},
		{"unavailable_after is no agent", []string{"unavailable_after: 25 Jun 2010 15:00:00 PST, noarchive"}, "text/plain", "", true},
		{"header without it", []string{"noindex, nofollow"}, "text/html", "<p>x", false},
		{"no header", nil, "text/html", "<p>x", false},
		{"meta", nil, "text/html; charset=utf-8", `<html><head><meta name="robots" content="noindex,noarchive"></head><body>x`, true},
		{"meta upper case", nil, "text/html", `<HTML><HEAD><META NAME="ROBOTS" CONTENT="NOARCHIVE"></HEAD>`, true},
		{"meta for herod", nil, "text/html", `<meta name=herod content=noarchive>`, true},
		{"meta for another bot", nil, "text/html", `<meta name=googlebot content=noarchive>`, false},
		{"meta without it", nil, "text/html", `<meta name=robots content="noindex">`, false},
		{"meta after the head", nil, "text/html", `<head></head><body><meta name=robots content=noarchive>`, false},
		{"meta after body content", nil, "text/html", `<p>text</p><meta name=robots content=noarchive>`, false},
		{"meta after a script and a style", nil, "text/html", `<script>x</script><style>p{}</style><title>t</title><meta name=robots content=noarchive>`, true},
		{"meta in a script is text", nil, "text/html", `<head><script>"<meta name=robots content=noarchive>"</script></head>`, false},
		{"meta in a non-HTML body", nil, "text/plain", `<meta name=robots content=noarchive>`, false},
		{"xhtml", nil, "application/xhtml+xml", `<html xmlns="http://www.w3.org/1999/xhtml"><head><meta name="robots" content="noarchive"/></head></html>`, true},
		{"past the scanned bytes", nil, "text/html", "<head>" + strings.Repeat("<link>", noArchiveScan/6) + `<meta name=robots content=noarchive>`, false},
	} {
		h := http.Header{}
		for _, v := range tc.header {
			h.Add("X-Robots-Tag", v)
		}
		if got := noArchive(h, tc.ctype, []byte(tc.body), "herod"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func FuzzNoArchive(f *testing.F) {
	f.Add("noarchive", `<meta name=robots content=noarchive>`)
	f.Add("herod: noarchive", `<head><meta name="herod" content="NOARCHIVE"/></head>`)
	f.Add("unavailable_after: x", "<html><head><title>t</title></head><body>")
	f.Fuzz(func(t *testing.T, hdr, body string) {
		noArchive(http.Header{"X-Robots-Tag": {hdr}}, "text/html", []byte(body), "herod")
	})
}

// TestCrawlNoArchive: answers that ask not to be archived leave no
// version (counted), their links are followed; with KeepNoArchive they
// are stored like any other.
func TestCrawlNoArchive(t *testing.T) {
	for _, keep := range []bool{false, true} {
		pages := map[string]string{
			"/":      links(nil, "/meta", "/hdr"),
			"/meta":  `<html><head><meta name="robots" content="noarchive"></head><body><a href="/after">x</a></body></html>`,
			"/after": "after",
			"/hdr":   "header",
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, ok := pages[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			if r.URL.Path == "/hdr" {
				w.Header().Set("X-Robots-Tag", "noarchive")
			}
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, body)
		}))
		defer srv.Close()
		a := newMemArchive()
		cfg := testConfig(newClock())
		cfg.KeepNoArchive = keep
		c, _ := startCrawler(t, t.TempDir(), cfg, a)
		if err := c.Add(context.Background(), []string{srv.URL + "/"}); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, c)
		stored := func(p string) bool { return a.count(srv.URL+p) > 0 }
		if !stored("/") || !stored("/after") {
			t.Errorf("keep=%v: the page linked from a noarchive page was not crawled: %v", keep, a.urls())
		}
		n := c.Stats().ErrorsByKind[KindNoArchive]
		if keep {
			if !stored("/meta") || !stored("/hdr") || n != 0 {
				t.Errorf("keep: stored %v, %d counted noarchive", a.urls(), n)
			}
			continue
		}
		if stored("/meta") || stored("/hdr") || n != 2 {
			t.Errorf("stored %v, %d counted noarchive, want neither /meta nor /hdr and 2", a.urls(), n)
		}
		if _, err := a.State(context.Background(), srv.URL+"/meta"); err != nil {
			t.Errorf("no crawl state kept for /meta: %v", err)
		}
	}
}

// BenchmarkNoArchive: the check's cost on a fetched page, with a head and
// without one (where the scan stops at the first body element):
//
//	go test -run '^$' -bench NoArchive ./crawl/
func BenchmarkNoArchive(b *testing.B) {
	text := strings.Repeat("<p>text <a href=/x>x</a></p>", 3000)
	for _, tc := range []struct{ name, body string }{
		{"head", "<html><head><title>x</title>" + strings.Repeat(`<link rel=stylesheet href="/a.css">`, 20) + "</head><body>" + text + "</body></html>"},
		{"nohead", text},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			for b.Loop() {
				if noArchive(http.Header{}, "text/html", body, "herod") {
					b.Fatal("noarchive")
				}
			}
		})
	}
}
