package capture

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/fidelityweb"
	"github.com/herod-archive/herod/internal/spaweb"
)

// liveDone scrolls the next thing a reader would scroll to into view (an
// image not loaded yet, the end of the list) and reports whether the
// page is complete: every image loaded, the list at its end, the
// navigation and the route's content built, the font loaded.
const liveDone = `(function(){
  var pending = Array.from(document.images).find(function(i) {
    return (i.dataset.src && !i.getAttribute("src")) || !i.complete;
  });
  if (pending) { pending.scrollIntoView(); return false; }
  var more = document.getElementById("more");
  if (more.textContent !== "the end") { more.scrollIntoView(); return false; }
  return document.querySelectorAll("nav a").length === 4 && !!document.querySelector("#view h1") &&
    document.fonts.status === "loaded";
})()`

// liveVisit opens pageURL in a plain headless Chromium (no capture: no
// interception, no proxy), scrolls as a reader would until the page is
// complete (liveDone) and returns how long that took.
func liveVisit(t *testing.T, pageURL string) time.Duration {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browsertest.Find(t).Path()),
		chromedp.UserDataDir(t.TempDir()), chromedp.DisableGPU, chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	tab, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 30*time.Second)
	defer cancelT()
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("live visit of %s: %v", pageURL, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](liveDone))
		if err != nil {
			t.Fatalf("live visit of %s: %v", pageURL, err)
		}
		if done {
			return time.Since(start)
		}
		<-tick.C
	}
}

// plainFetch is what herod's crawler finds today for pageURL: the page
// fetched over HTTP, its requisites (crawl.ExtractRequisites) fetched,
// and theirs in turn (stylesheets' imports, scripts' static references),
// within the page's host. It returns the request URIs fetched and the
// links the HTML gives.
func plainFetch(t *testing.T, pageURL string) (fetched map[string]bool, links []string, bytes int64) {
	t.Helper()
	root, _ := url.Parse(pageURL)
	fetched = map[string]bool{}
	queue := []string{pageURL}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		pu, err := url.Parse(u)
		if err != nil || pu.Host != root.Host || fetched[pu.RequestURI()] {
			continue
		}
		fetched[pu.RequestURI()] = true
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		bytes += int64(len(body))
		ct := resp.Header.Get("Content-Type")
		l, reqs := crawl.ExtractRequisites(pu, ct, body)
		if u == pageURL {
			links = l
		}
		if mt, _, _ := mime.ParseMediaType(ct); mt == "text/html" || mt == "text/css" || strings.Contains(mt, "javascript") {
			queue = append(queue, reqs...)
		}
	}
	return fetched, links, bytes
}

// cpuTime returns this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFidelity compares, on the sample application's pages, the
// subresources a reader's browser loads (a live visit scrolled to the
// end, counted by the site) with those the capture recorded and those
// herod's plain fetch and extraction find, and logs the cost of a page
// rendered against a page fetched. The capture must record ≥ 95% of the
// live subresources and find every page only the scripts name.
func TestFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("renders pages in Chromium; skipped with -short")
	}
	c := newCapturer(t, nil)
	site := startSite(t, spaweb.Config{})
	var live, captured, plain int
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-10s %5s %8s %6s | %9s %9s %9s | %9s %9s %9s\n", "page", "live", "captured", "plain",
		"render ms", "cpu ms", "MiB", "fetch ms", "cpu ms", "KiB")
	for _, path := range []string{"/", "/app/about"} {
		pageURL := site.URL() + path
		site.Reset()
		liveVisit(t, pageURL)
		liveSet := site.Requests()
		delete(liveSet, "/favicon.ico")
		delete(liveSet, path)

		site.Reset()
		res, err := c.Capture(context.Background(), pageURL)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, x := range res.Exchanges {
			if u, err := url.Parse(x.URL); err == nil && x.Status == 200 && x.Body != nil {
				got[u.RequestURI()] = true
			}
		}

		startWall, startCPU := time.Now(), cpuTime()
		fetched, links, n := plainFetch(t, pageURL)
		fetchWall, fetchCPU := time.Since(startWall), cpuTime()-startCPU

		nc, np := 0, 0
		for uri := range liveSet {
			if got[uri] {
				nc++
			} else {
				t.Logf("%s: live %s not captured", path, uri)
			}
			if fetched[uri] {
				np++
			}
		}
		live, captured, plain = live+len(liveSet), captured+nc, plain+np
		for _, h := range site.HiddenPages() {
			if !slices.Contains(res.Links, h) {
				t.Errorf("%s: capture links lack %s", path, h)
			}
			if slices.Contains(links, h) {
				t.Errorf("%s: plain extraction found %s, which only a script names", path, h)
			}
		}
		fmt.Fprintf(&report, "%-10s %5d %8d %6d | %9d %9d %9.0f | %9.1f %9d %9.0f\n", path, len(liveSet), nc, np,
			res.Usage.Wall.Milliseconds(), res.Usage.CPU.Milliseconds(), float64(res.Usage.PeakMemory)/(1<<20),
			float64(fetchWall.Microseconds())/1000, fetchCPU.Milliseconds(), float64(n)/1024)
	}
	share := float64(captured) / float64(live)
	fmt.Fprintf(&report, "live subresources %d: captured %d (%.1f%%), plain fetch %d (%.1f%%)", live, captured,
		100*share, plain, 100*float64(plain)/float64(live))
	t.Log(report.String())
	if share < 0.95 {
		t.Errorf("captured %.1f%% of live subresources, want ≥ 95%%", 100*share)
	}
}

// TestFidelityDocSite renders two pages of the fidelity sample site
// (internal/fidelityweb: a documentation-like site whose HTML, CSS and
// module imports name most of what it loads) and compares what the site
// served during each capture with what the capture recorded and what
// the plain fetch finds, with the same cost figures as TestFidelity. It
// runs with HEROD_CAPTURE_DOCSITE=1.
func TestFidelityDocSite(t *testing.T) {
	if os.Getenv("HEROD_CAPTURE_DOCSITE") == "" {
		t.Skip("set HEROD_CAPTURE_DOCSITE=1 to render the documentation-like site")
	}
	c := newCapturer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site := fidelityweb.New(fidelityweb.Config{Pages: 2})
	if err := site.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var served, captured, plain int64
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-10s %6s %8s %6s | %9s %9s %9s | %9s %9s %9s\n", "page", "served", "captured", "plain",
		"render ms", "cpu ms", "MiB", "fetch ms", "cpu ms", "KiB")
	for _, pageURL := range site.Pages()[:2] {
		before := site.Requests()
		res, err := c.Capture(context.Background(), pageURL)
		if err != nil {
			t.Fatal(err)
		}
		n := site.Requests() - before
		var rec []string
		for _, x := range res.Exchanges {
			if x.Status != 0 && (x.Body != nil || x.Status/100 == 3) {
				rec = append(rec, x.URL)
			}
		}
		startWall, startCPU := time.Now(), cpuTime()
		fetched, _, size := plainFetch(t, pageURL)
		fetchWall, fetchCPU := time.Since(startWall), cpuTime()-startCPU
		np := 0
		for _, u := range rec {
			if pu, err := url.Parse(u); err == nil && fetched[pu.RequestURI()] {
				np++
			}
		}
		served, captured, plain = served+n, captured+int64(len(rec)), plain+int64(np)
		p, _ := url.Parse(pageURL)
		fmt.Fprintf(&report, "%-10s %6d %8d %6d | %9d %9d %9.0f | %9.1f %9d %9.0f\n", p.Path, n, len(rec), np,
			res.Usage.Wall.Milliseconds(), res.Usage.CPU.Milliseconds(), float64(res.Usage.PeakMemory)/(1<<20),
			float64(fetchWall.Microseconds())/1000, fetchCPU.Milliseconds(), float64(size)/1024)
	}
	fmt.Fprintf(&report, "requests served during the captures %d: recorded %d (%.1f%%); of those, plain fetch finds %d (%.1f%%)",
		served, captured, 100*float64(captured)/float64(served), plain, 100*float64(plain)/float64(captured))
	t.Log(report.String())
	if float64(captured) < 0.95*float64(served) {
		t.Errorf("recorded %d of %d requests served, want ≥ 95%%", captured, served)
	}
}
