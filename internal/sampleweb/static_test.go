package sampleweb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func startStatic(t testing.TB, dir string) *StaticServer {
	t.Helper()
	s := NewStaticServer(StaticConfig{Dir: dir})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("static start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("static close: %v", err)
		}
	})
	return s
}

// TestStaticSite writes a site, serves it, crawls it, and checks the crawl
// finds exactly StaticSitePaths, all 200, with the written bytes.
func TestStaticSite(t *testing.T) {
	const pages = 200
	dir := t.TempDir()
	if err := WriteStaticSite(dir, pages, 9); err != nil {
		t.Fatal(err)
	}
	s := startStatic(t, dir)
	root := strings.TrimSuffix(s.URL(), "/")
	got := newTestCrawler(t).crawl([]string{s.URL()}, false)
	var want []string
	html := 0
	for _, p := range StaticSitePaths(pages, 9) {
		want = append(want, root+p)
		if p == "/" || strings.HasSuffix(p, ".html") {
			html++
		}
	}
	diff(t, "static crawl", keys(got), want)
	if html != pages {
		t.Errorf("%d HTML pages, want %d", html, pages)
	}
	for u, f := range got {
		if f.status != 200 {
			t.Errorf("%s: status %d", u, f.status)
		}
	}
	if n := s.Served(); n < int64(len(want)) {
		t.Errorf("Served() = %d, want >= %d", n, len(want))
	}
	resp, _ := get(t, "GET", s.URL()+"img/2.svg", nil)
	if ct := resp.Header.Get("Content-Type"); ct != "image/svg+xml" {
		t.Errorf("svg served as %q", ct)
	}
	resp, _ = get(t, "GET", s.URL(), map[string]string{"If-Modified-Since": resp.Header.Get("Last-Modified")})
	if resp.StatusCode != 304 {
		t.Errorf("conditional GET of static root: %d", resp.StatusCode)
	}
}

func TestStaticSiteDeterministic(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for _, x := range []struct {
		dir  string
		seed int64
	}{{a, 4}, {b, 4}, {c, 5}} {
		if err := WriteStaticSite(x.dir, 50, x.seed); err != nil {
			t.Fatal(err)
		}
	}
	same, differ := 0, 0
	for _, p := range append(StaticSitePaths(50, 4), "/robots.txt") {
		name := filepath.FromSlash(strings.TrimPrefix(p, "/"))
		if p == "/" {
			name = "index.html"
		}
		ba, err1 := os.ReadFile(filepath.Join(a, name))
		bb, err2 := os.ReadFile(filepath.Join(b, name))
		bc, _ := os.ReadFile(filepath.Join(c, name))
		if err1 != nil || err2 != nil || !bytes.Equal(ba, bb) {
			t.Errorf("%s differs between two writes with one seed (%v, %v)", p, err1, err2)
		}
		if bytes.Equal(ba, bc) {
			same++
		} else {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("seeds 4 and 5 wrote identical sites (%d files)", same)
	}
}

func TestStaticServerErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  StaticConfig
		want error
	}{
		{"not loopback", StaticConfig{Dir: dir, Addr: "0.0.0.0:0"}, ErrNotLoopback},
		{"hostname", StaticConfig{Dir: dir, Addr: "example.org:80"}, ErrNotLoopback},
		{"no port", StaticConfig{Dir: dir, Addr: "127.0.0.1"}, nil},
		{"no dir", StaticConfig{Dir: filepath.Join(dir, "absent")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewStaticServer(tt.cfg).Start(context.Background())
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("Start = %v, want %v", err, tt.want)
			}
		})
	}
}

// BenchmarkWgetStaticSite measures `wget -r -l inf -np -nH -q` on a static
// site of 3000 pages, the reference for herod's crawl rate:
//
//	go test -run '^$' -bench WgetStaticSite -benchtime 1x ./internal/sampleweb
func BenchmarkWgetStaticSite(b *testing.B) {
	wget, err := exec.LookPath("wget")
	if err != nil {
		b.Skip("wget not installed")
	}
	const pages = 2000
	dir := b.TempDir()
	if err := WriteStaticSite(dir, pages, 1); err != nil {
		b.Fatal(err)
	}
	files := len(StaticSitePaths(pages, 1))
	s := startStatic(b, dir)
	b.ResetTimer()
	var elapsed time.Duration
	for range b.N {
		out := b.TempDir()
		start := time.Now()
		cmd := exec.Command(wget, "-r", "-l", "inf", "-np", "-nH", "-q", "-P", out, s.URL())
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("wget: %v: %s", err, msg)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(pages*b.N)/elapsed.Seconds(), "pages/s")
	b.ReportMetric(float64(files*b.N)/elapsed.Seconds(), "files/s")
}
