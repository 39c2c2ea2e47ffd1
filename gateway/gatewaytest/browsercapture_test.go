package gatewaytest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/spaweb"
	"github.com/herod-archive/herod/internal/testwait"
)

// visualTolerance is the share of pixels that may differ (by more than
// pixelDiff's per-channel tolerance) between a live page and its replay
// for the two to count as visually equal.
const visualTolerance = 0.01

// browserCaptured captures every page of the sample application with a
// browser (capture.Capturer), as a node with the capture role does, and
// stores the responses (marked captured in a browser) and each page's
// screenshot in a real archive.Store.
func browserCaptured(t *testing.T, pages []string) *archive.Store {
	t.Helper()
	c, err := capture.New(capture.Config{
		ExecPath: browsertest.Find(t).Path(), NoSandbox: os.Geteuid() == 0, TempDir: t.TempDir(),
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 45 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := archive.Open(t.TempDir(), archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for _, p := range pages {
		res, err := c.Capture(ctx, p)
		if err != nil {
			t.Fatalf("capture %s: %v", p, err)
		}
		for _, cp := range res.ToArchive() {
			if _, _, err := st.Put(ctx, cp); err != nil {
				t.Fatalf("put %s: %v", cp.URL, err)
			}
		}
		if len(res.Screenshot) == 0 {
			t.Fatalf("capture %s: no screenshot (capped: %v)", p, res.Capped)
		}
		u, err := canon.Canonical(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Put(ctx, archive.ScreenshotCapture(u, time.Now(), res.Screenshot)); err != nil {
			t.Fatalf("put the screenshot of %s: %v", p, err)
		}
	}
	return st
}

// replayFigures are one side's results of replaying the sample
// application's pages.
type replayFigures struct {
	pages, equal       int
	liveSubs, replayed int
	reachedLive        int
	missing            []string
}

// replaySide loads each page live (once, kept in lives) and through a
// gateway over a, both scrolled to the end and back, and counts the
// live subresources the replay loaded from the archive and the pages
// whose replay differs from the live page in less than visualTolerance
// of their pixels.
func replaySide(t *testing.T, br *chrome, site *spaweb.Site, a gateway.Archive, pages []string, lives map[string]visit, out, side string) replayFigures {
	t.Helper()
	ui, content, _, _ := serveGateway(t, gateway.Config{Archive: a})
	ts := gateway.FormatTimestamp(time.Now().UTC())
	const w, h = 1280, 800
	var f replayFigures
	for _, p := range pages {
		live, ok := lives[p]
		if !ok {
			live = br.loadScrolled(t, p, w, h, false, 300*time.Millisecond, true)
			lives[p] = live
		}
		before := site.Requests()
		rep := br.loadScrolled(t, ui+"/web/"+ts+"/"+p, w, h, true, 300*time.Millisecond, true)
		after := site.Requests()
		for uri, n := range after {
			f.reachedLive += n - before[uri]
		}
		got := map[string]bool{}
		for _, r := range rep.Requests {
			if a := archivedURL(r.URL, content); a != "" && r.Status >= 200 && r.Status < 400 {
				got[resourceKey(a)] = true
			}
		}
		subs, loaded := 0, 0
		doc := true
		for _, r := range live.Requests {
			if doc {
				doc = r.Status >= 300 && r.Status < 400
				continue
			}
			if r.Status < 200 || r.Status >= 400 || !strings.HasPrefix(r.URL, "http") || strings.HasSuffix(r.URL, "/favicon.ico") {
				continue
			}
			subs++
			if got[resourceKey(r.URL)] {
				loaded++
			} else {
				f.missing = append(f.missing, side+" "+strings.TrimPrefix(p, site.URL())+": "+strings.TrimPrefix(r.URL, site.URL()))
			}
		}
		d := pixelDiff(live.Screenshot, rep.Screenshot)
		f.pages++
		f.liveSubs += subs
		f.replayed += loaded
		if d <= visualTolerance {
			f.equal++
		} else if out != "" {
			name := strings.NewReplacer("/", "_", ":", "_").Replace(strings.TrimPrefix(p, site.URL()))
			for kind, v := range map[string]*visit{"live": &live, side: &rep} {
				if fh, err := os.Create(filepath.Join(out, name+"."+kind+".png")); err == nil {
					_ = png.Encode(fh, v.Screenshot)
					fh.Close()
				}
			}
		}
		t.Logf("%s %s: %d/%d live subresources replayed, %.2f%% pixels differ", side, strings.TrimPrefix(p, site.URL()), loaded, subs, 100*d)
	}
	return f
}

// TestBrowserCaptureReplay is issue 41's acceptance on replay: every
// page of the sample single-page application (internal/spaweb) is
// captured in a browser (capture.Capturer, records in a real
// archive.Store marked captured in a browser, with the screenshots) and
// replayed through the gateway, framed, in headless Chromium; the live
// page and its replay are both scrolled to the end and back. It reports
// the share of the subresources the live page loaded that the replay
// loaded from the archive, and the share of pages whose replay differs
// from the live page in at most 1% of pixels (pixelDiff: a pixel differs
// when a channel differs by more than 8 of 255), beside the same figures
// for herod's plain crawl of the same pages (crawl.Crawler, every page a
// seed). The browser capture must reach ≥ 95% and ≥ 90%, and no replay
// may reach the live site. It runs with HEROD_CAPTURE_REPLAY=1
// (HEROD_CAPTURE_REPLAY_OUT: a directory for the screenshots of pages
// that differ).
func TestBrowserCaptureReplay(t *testing.T) {
	if os.Getenv("HEROD_CAPTURE_REPLAY") == "" {
		t.Skip("set HEROD_CAPTURE_REPLAY=1 to capture the sample application in a browser and replay it")
	}
	br := newChrome(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site := spaweb.New(spaweb.Config{})
	if err := site.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	pages := site.Pages()
	out := os.Getenv("HEROD_CAPTURE_REPLAY_OUT")

	browser := browserCaptured(t, pages)
	plain, _ := crawlSite(t, pages, 0)
	lives := map[string]visit{}
	withRole := replaySide(t, br, site, browser, pages, lives, out, "browser")
	without := replaySide(t, br, site, plain, pages, lives, out, "plain")
	for _, m := range append(withRole.missing, without.missing...) {
		t.Logf("not replayed: %s", m)
	}
	pct := func(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }
	summary := fmt.Sprintf("capture-replay: pages %d | browser capture: subresources %d/%d (%.1f%%) visually-equal %d/%d (%.1f%%) | "+
		"plain crawl: subresources %d/%d (%.1f%%) visually-equal %d/%d (%.1f%%) | reached-live %d",
		len(pages), withRole.replayed, withRole.liveSubs, pct(withRole.replayed, withRole.liveSubs), withRole.equal, withRole.pages, pct(withRole.equal, withRole.pages),
		without.replayed, without.liveSubs, pct(without.replayed, without.liveSubs), without.equal, without.pages, pct(without.equal, without.pages),
		withRole.reachedLive+without.reachedLive)
	t.Log(summary)
	fmt.Println(summary)
	if r := withRole.reachedLive + without.reachedLive; r != 0 {
		t.Errorf("%d requests reached the live site during the replays", r)
	}
	if pct(withRole.replayed, withRole.liveSubs) < 95 {
		t.Errorf("browser capture: %.1f%% of live subresources replayed, want ≥ 95%%", pct(withRole.replayed, withRole.liveSubs))
	}
	if pct(withRole.equal, withRole.pages) < 90 {
		t.Errorf("browser capture: %.1f%% of pages visually equal, want ≥ 90%%", pct(withRole.equal, withRole.pages))
	}
}

// TestCalendarThumbnailLoads checks in headless Chromium that the list of
// dates of a page captured in a browser shows its screenshot: the chip's
// image loads from the content origin (the UI's CSP allows it) at the
// screenshot's size.
func TestCalendarThumbnailLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ctx := context.Background()
	m := NewMem()
	at := time.Date(2026, 11, 28, 10, 15, 0, 0, time.UTC)
	if err := m.Add(ctx, &archive.Capture{URL: calendarPage, Time: at, Status: 200, Browser: true,
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte("<title>rendered</title>")}); err != nil {
		t.Fatal(err)
	}
	var shot bytes.Buffer
	if err := png.Encode(&shot, image.NewRGBA(image.Rect(0, 0, 320, 200))); err != nil {
		t.Fatal(err)
	}
	sc := archive.ScreenshotCapture(calendarPage, at.Add(3*time.Second), shot.Bytes())
	if err := m.Add(ctx, &sc); err != nil {
		t.Fatal(err)
	}
	ui, content, _, _ := serveGateway(t, gateway.Config{Archive: m})
	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/*/"+calendarPage)); err != nil {
		t.Fatal(err)
	}
	type img struct {
		Src   string
		Width int
	}
	var got img
	testwait.For(t, "the thumbnail to load", 30*time.Second, func() error {
		var err error
		got, err = chromedp.Run(tctx, chromedp.Evaluate[img](`(function(){ var i = document.querySelector(".caps img");
			return i ? {Src: i.src, Width: i.complete ? i.naturalWidth : 0} : {Src: "", Width: 0}; })()`))
		if err == nil && got.Width == 0 {
			err = fmt.Errorf("not loaded: %+v", got)
		}
		return err
	})
	if want := content + "/web/20261128101503id_/urn:view:" + calendarPage; got.Src != want || got.Width != 320 {
		t.Errorf("thumbnail %+v, want %s at its 320 px", got, want)
	}
}
