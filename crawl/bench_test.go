package crawl

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

var wgetCompare = flag.Bool("crawl.wget", false, "compare the crawler's pages/s with wget -r on the same loopback site")

// staticSite serves n HTML pages (/p/<i>.html, each about 4 KiB, linking
// to 8 other pages, one of 50 images and one of 10 stylesheets), the
// images and stylesheets, with ETag and Last-Modified. Every object is
// reachable from /p/0.html. It returns the server and the number of
// objects.
func staticSite(tb testing.TB, n int) (*httptest.Server, int) {
	objects := map[string][]byte{}
	types := map[string]string{}
	filler := strings.Repeat("Herodotus archives the web daily. ", 100)
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>page %d</title><link rel=stylesheet href=\"/css/%d.css\"></head><body><h1>Page %d</h1><p>%s</p>", i, i%10, i, filler)
		fmt.Fprintf(&b, "<img src=\"/img/%d.png\">", i%50)
		// page i links to i+1 (so every page is reachable) and 7 others.
		fmt.Fprintf(&b, "<a href=\"%d.html\">next</a>", (i+1)%n)
		for k := 1; k <= 7; k++ {
			fmt.Fprintf(&b, "<a href=\"/p/%d.html\">link %d</a>", (i*7+k*13)%n, k)
		}
		b.WriteString("</body></html>")
		p := fmt.Sprintf("/p/%d.html", i)
		objects[p], types[p] = []byte(b.String()), "text/html; charset=utf-8"
	}
	for i := range 50 {
		p := fmt.Sprintf("/img/%d.png", i)
		objects[p], types[p] = []byte(fmt.Sprintf("\x89PNG\r\n\x1a\n%0512d", i)), "image/png"
	}
	for i := range 10 {
		p := fmt.Sprintf("/css/%d.css", i)
		objects[p], types[p] = []byte(fmt.Sprintf("body{margin:%dpx}", i)), "text/css"
	}
	mod := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := objects[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", types[r.URL.Path])
		w.Header().Set("ETag", fmt.Sprintf("%q", r.URL.Path))
		http.ServeContent(w, r, "", mod, strings.NewReader(string(body)))
	}))
	tb.Cleanup(srv.Close)
	return srv, len(objects)
}

// benchArchive is an Archive that counts the URLs it stored.
type benchArchive interface {
	Archive
	stored() int
}

func (m *memArchive) stored() int { return len(m.urls()) }

// storeArchive is the real archive.Store (version files, gzip, fsync,
// goleveldb index) counting its new versions.
type storeArchive struct {
	*archive.Store
	n atomic.Int64
}

func (s *storeArchive) Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error) {
	v, added, err := s.Store.Put(ctx, c)
	if added {
		s.n.Add(1)
	}
	return v, added, err
}

func (s *storeArchive) stored() int { return int(s.n.Load()) }

// benchArchives are the archives the crawl rate is measured with.
var benchArchives = []struct {
	name string
	open func(tb testing.TB, dir string) benchArchive
}{
	{"mem", func(testing.TB, string) benchArchive { return newMemArchive() }},
	{"store", func(tb testing.TB, dir string) benchArchive {
		st, err := archive.Open(dir, archive.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return &storeArchive{Store: st}
	}},
}

// crawlOnce crawls the whole site with a fresh crawler and returns the
// objects stored and the time taken.
func crawlOnce(tb testing.TB, root string, dir string, a benchArchive) (int, time.Duration) {
	cfg := Config{HostRate: 1e6, HostConns: 8, Concurrency: 8, AllowPrivate: loopback}
	f := &loopForwarder{}
	c, err := New(dir, cfg, depsOf(a, f))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	f.c = c
	start := time.Now()
	if err := c.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := c.Add(context.Background(), []string{root}); err != nil {
		tb.Fatal(err)
	}
	for !c.Idle() {
		time.Sleep(time.Millisecond)
	}
	return a.stored(), time.Since(start)
}

// BenchmarkCrawlStaticSite measures pages/s of one crawler (queue and
// seen set on disk, SHA-1, link extraction) crawling a 1,060-object static
// site on loopback, into an in-memory archive ("mem") and into the real
// archive.Store with its fsyncs ("store").
func BenchmarkCrawlStaticSite(b *testing.B) {
	srv, objects := staticSite(b, 1000)
	for _, ba := range benchArchives {
		b.Run(ba.name, func(b *testing.B) {
			var total int
			var elapsed time.Duration
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				n, d := crawlOnce(b, srv.URL+"/p/0.html", filepath.Join(dir, "queue"), ba.open(b, filepath.Join(dir, "archive")))
				if n != objects {
					b.Fatalf("stored %d objects, want %d", n, objects)
				}
				total += n
				elapsed += d
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "pages/s")
		})
	}
}

// TestCrawlVsWget runs the crawler and wget -r on the same site and logs
// both rates (go test -run CrawlVsWget -crawl.wget -v ./crawl/).
func TestCrawlVsWget(t *testing.T) {
	if !*wgetCompare {
		t.Skip("enable with -crawl.wget")
	}
	wget, err := exec.LookPath("wget")
	if err != nil {
		t.Skip("wget not installed")
	}
	srv, objects := staticSite(t, 1000)
	rates := map[string]float64{}
	for _, ba := range benchArchives {
		n, d := crawlOnce(t, srv.URL+"/p/0.html", t.TempDir(), ba.open(t, t.TempDir()))
		if n != objects {
			t.Fatalf("crawler (%s archive) stored %d objects, want %d", ba.name, n, objects)
		}
		rates[ba.name] = float64(n) / d.Seconds()
		t.Logf("crawler, %s archive: %d objects in %v = %.0f pages/s", ba.name, n, d, rates[ba.name])
	}
	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command(wget, "-r", "-l", "inf", "-q", "-P", out, srv.URL+"/p/0.html")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wget: %v\n%s", err, b)
	}
	wd := time.Since(start)
	files := 0
	filepath.WalkDir(out, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files++
		}
		return nil
	})
	wgetRate := float64(files) / wd.Seconds()
	t.Logf("wget -r: %d files in %v = %.0f pages/s", files, wd, wgetRate)
	for _, ba := range benchArchives {
		t.Logf("ratio crawler(%s)/wget = %.2f", ba.name, rates[ba.name]/wgetRate)
	}
}

// BenchmarkAdd measures the durable queue: URLs/s accepted by Add in
// batches of 50 (one fetched page's new links) from 8 concurrent callers,
// each batch synced to disk before Add returns (group commit).
func BenchmarkAdd(b *testing.B) {
	c, err := New(b.TempDir(), Config{}, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var next atomic.Int64
	start := time.Now()
	b.SetParallelism(4) // 8 callers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		batch := make([]string, 50)
		for pb.Next() {
			n := next.Add(1)
			for i := range batch {
				batch[i] = fmt.Sprintf("http://h%d.example/p/%d/%d", n%97, n, i)
			}
			if err := c.Add(context.Background(), batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(next.Load()*50)/time.Since(start).Seconds(), "urls/s")
}

// BenchmarkExtractLinks measures link extraction from one 4 KiB page with
// 10 links: the token-stream extractor herod uses, and the same page with
// an SVG icon, which goes through goquery's tree (internal/webrefs).
func BenchmarkExtractLinks(b *testing.B) {
	srv, _ := staticSite(b, 100)
	resp, err := http.Get(srv.URL + "/p/1.html")
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	base, _ := url.Parse(srv.URL + "/p/1.html")
	b.Run("tokens", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if len(ExtractLinks(base, "text/html", body)) == 0 {
				b.Fatal("no links")
			}
		}
	})
	// svg: the same page with an inline SVG icon at its end, the worst
	// case: the token scan reads the whole page, then goquery's tree
	// does it again.
	svg := append(bytes.Clone(body), `<svg width="16" height="16"><path d="M0 0h16v16z"/></svg>`...)
	b.Run("svg", func(b *testing.B) {
		b.SetBytes(int64(len(svg)))
		for b.Loop() {
			if len(ExtractLinks(base, "text/html", svg)) == 0 {
				b.Fatal("no links")
			}
		}
	})
}
