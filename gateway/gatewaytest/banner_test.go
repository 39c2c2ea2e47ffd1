package gatewaytest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/testwait"
)

// The site of the banner tests: a page linking to a second page (two
// captures), which links to a third, which links to a page never
// archived and to a PDF.
const (
	bannerSite = "http://banner.example/"
	bannerPDF  = bannerSite + "report.pdf"
)

// bannerDay is the day of the site's captures; the second page has one
// more, the day before.
var bannerDay = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// bannerPDFBytes is a one-page PDF with a line of text.
var bannerPDFBytes = []byte(`%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >> endobj
4 0 obj << /Length 44 >> stream
BT /F1 18 Tf 20 70 Td (Archived report) Tj ET
endstream endobj
5 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj
trailer << /Root 1 0 R >>
%%EOF
`)

// bannerGateway serves the banner tests' site from a gateway and returns
// the UI origin's URL, the timestamp of the first page's capture and the
// gateway.
func bannerGateway(t *testing.T) (ui, ts string, gw *gateway.Server) {
	t.Helper()
	ctx := context.Background()
	m := NewMem()
	add := func(u string, at time.Time, ctype string, body []byte) {
		t.Helper()
		if err := m.Add(ctx, &archive.Capture{URL: u, Time: at, Status: 200,
			Header: http.Header{"Content-Type": {ctype}}, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	page := func(n int, links string) []byte {
		return []byte(fmt.Sprintf(`<!doctype html><html><head><title>page %d</title></head><body><h1 id="v">page %d</h1>%s</body></html>`, n, n, links))
	}
	add(bannerSite+"one.html", bannerDay.Add(3*time.Minute), "text/html", page(1, `<p><a id="next" href="two.html">to page 2</a> <a id="pdf" href="report.pdf">the report (PDF)</a></p>`))
	add(bannerSite+"two.html", bannerDay.Add(-24*time.Hour), "text/html", page(2, `<p>an older version</p>`))
	add(bannerSite+"two.html", bannerDay.Add(2*time.Minute), "text/html", page(2, `<p><a id="next" href="three.html">to page 3</a></p>`))
	add(bannerSite+"three.html", bannerDay.Add(time.Minute), "text/html", page(3, `<p><a id="next" href="never-archived.html">a page not archived</a></p>`))
	add(bannerPDF, bannerDay, "application/pdf", bannerPDFBytes)
	ui, _, gw, _ = serveGateway(t, gateway.Config{Archive: m})
	return ui, gateway.FormatTimestamp(bannerDay.Add(3 * time.Minute))[:14], gw
}

// banner is what the framed page's banner shows.
type banner struct {
	URL, Field, Date, Dates, Title string
}

func readBanner(ctx context.Context) (banner, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[banner](`({URL: document.getElementById("herod-url").textContent,
		Field: document.querySelector("#herod-banner input[name=url]").value,
		Date: document.getElementById("herod-date").textContent,
		Dates: document.getElementById("herod-dates").textContent, Title: document.title})`))
}

// clickInFrame clicks the element sel of the content frame's document.
func clickInFrame(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	frames, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#herod-frame")))
	if err != nil || len(frames) == 0 {
		t.Fatalf("no content frame: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.FromNode(frames[0]), chromedp.NodeVisible)); err != nil {
		t.Fatalf("click %s in the frame: %v", sel, err)
	}
}

// frameText returns the text of the element sel of the content frame's
// document, "" if there is none yet.
func frameText(ctx context.Context, sel string) string {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	frames, err := chromedp.Run(fctx, chromedp.Nodes(chromedp.CSS("#herod-frame")))
	if err != nil || len(frames) == 0 {
		return ""
	}
	s, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS(sel), chromedp.FromNode(frames[0])))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// screenshot saves a PNG of the tab as name in $HEROD_SCREENSHOTS, if set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HEROD_SCREENSHOTS")
	if dir == "" {
		return
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644)
	}
	if err != nil {
		t.Error(err)
	}
}

// TestBannerFollowsFrame checks in headless Chromium that the banner of
// the framed replay follows two link clicks in the frame (its URL, the
// URL field of its form, the capture's date and the count of captures),
// and that a click to a page not archived shows the UI's own page for it
// (the 404 with its suggestions and form) top-level, not a 404 in the
// frame under the banner of the page before; its date box refuses
// 28/11/2026. Issue 35.
func TestBannerFollowsFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ui, ts, _ := bannerGateway(t)
	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(ui+"/web/"+ts+"/"+bannerSite+"one.html")); err != nil {
		t.Fatal(err)
	}
	follows := func(n int, u string, at time.Time, dates string) {
		t.Helper()
		var b banner
		want := banner{URL: u, Field: u, Date: at.Format(time.DateTime), Dates: dates, Title: u + " · " + at.Format(time.DateTime) + " · herod"}
		testwait.For(t, fmt.Sprintf("page %d in the frame and the banner", n), 20*time.Second, func() bool {
			if frameText(tctx, "#v") != fmt.Sprintf("page %d", n) {
				return false
			}
			var err error
			b, err = readBanner(tctx)
			return err == nil && b == want
		})
		loc, err := chromedp.Run(tctx, chromedp.Evaluate[string](`location.pathname`))
		if err != nil || loc != "/web/"+ts+"/"+u {
			t.Errorf("address %q (%v), want /web/%s/%s", loc, err, ts, u)
		}
	}
	follows(1, bannerSite+"one.html", bannerDay.Add(3*time.Minute), "1 capture")
	screenshot(t, tctx, "banner-1280")
	// The date box takes a date year first or a timestamp; 28/11/2026 is
	// refused before it is sent (the gateway would answer 400, never a
	// replay of the year 2811).
	valid, err := chromedp.Run(tctx, chromedp.Evaluate[[]bool](`["28/11/2026", "11/28/2026", "2026-11-28", "2026-11-28 10:15", "20261128101503412"].map(v => {
		const f = document.querySelector("#herod-banner form"), was = f.elements.date.value;
		f.elements.date.value = v;
		const ok = f.checkValidity();
		f.elements.date.value = was;
		return ok;
	})`))
	if want := []bool{false, false, true, true, true}; err != nil || fmt.Sprint(valid) != fmt.Sprint(want) {
		t.Errorf("date box validity %v (%v), want %v", valid, err, want)
	}
	clickInFrame(t, tctx, "#next")
	follows(2, bannerSite+"two.html", bannerDay.Add(2*time.Minute), "2 captures")
	clickInFrame(t, tctx, "#next")
	follows(3, bannerSite+"three.html", bannerDay.Add(time.Minute), "1 capture")
	clickInFrame(t, tctx, "#next")
	missing := bannerSite + "never-archived.html"
	// One evaluation reads the page whole: the document may still be
	// replaced between separate queries while it loads.
	var page struct {
		Path, H1, Main string
		Frames         int
	}
	testwait.For(t, "the UI's own page for a page not archived", 20*time.Second, func() bool {
		var err error
		page, err = chromedp.Run(tctx, chromedp.Evaluate[struct {
			Path, H1, Main string
			Frames         int
		}](`({Path: location.pathname, H1: (document.querySelector("h1") || {}).textContent || "",
			Main: (document.querySelector("main") || {}).innerText || "", Frames: document.querySelectorAll("iframe").length})`))
		return err == nil && page.Path == "/web/*/"+missing && page.H1 == "404 Not Found" && page.Frames == 0 &&
			strings.Contains(page.Main, "The archive has no capture of ")
	})
	if !strings.Contains(page.Main, "The archive has no capture of "+missing) || !strings.Contains(page.Main, "list what the archive holds for the site") {
		t.Errorf("not-archived page: %q", page.Main)
	}
	if v, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector("form.go input[name=url]").value`)); err != nil || v != missing {
		t.Errorf("the page's form holds %q (%v), want %s", v, err, missing)
	}
	screenshot(t, tctx, "notarchived-1280")
	// Back leads to the page before, in its frame under its banner.
	if err := chromedp.Do(tctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	follows(3, bannerSite+"three.html", bannerDay.Add(time.Minute), "1 capture")
}

// TestBannerFitsNarrow checks in headless Chromium at 390 px (a phone)
// and at 1,280 px that every link, field and button of the banner and of
// the UI's forms lies within the viewport, and that no page scrolls
// sideways: the framed replay of a page and of a PDF, the home page, a
// calendar and the page of a URL not archived. Issue 35: the banner's
// button was cut off at 390 px. HEROD_SCREENSHOTS=DIR keeps a PNG of each.
func TestBannerFitsNarrow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ui, ts, _ := bannerGateway(t)
	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	for _, width := range []int64{390, 1280} {
		for _, p := range []struct {
			name, path, dates string
			buttons           int
		}{
			{"banner", "/web/" + ts + "/" + bannerSite + "two.html", "2 captures", 1},
			{"pdf", "/web/" + ts + "/" + bannerPDF, "1 capture", 1},
			{"home", "/", "", 1},
			{"calendar", "/web/*/" + bannerSite + "two.html", "", 0},
			{"notarchived", "/web/*/" + bannerSite + "never-archived.html", "", 1},
		} {
			name := fmt.Sprintf("%s-%d", p.name, width)
			if err := chromedp.Do(tctx, chromedp.EmulateViewport(width, 800), chromedp.Navigate(ui+p.path)); err != nil {
				t.Fatal(err)
			}
			if p.dates != "" {
				testwait.For(t, name+": the banner filled in", 20*time.Second, func() bool {
					b, err := readBanner(tctx)
					return err == nil && b.Dates == p.dates
				})
			}
			out, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#herod-banner a:not([hidden]), #herod-banner input:not([type=hidden]), #herod-banner button, header a, form.go input:not([type=hidden]), form.go button")).flatMap(e => {
				const r = e.getBoundingClientRect();
				return r.left < 0 || r.right > window.innerWidth || r.width === 0 ? [e.outerHTML.slice(0, 60) + " " + r.left + ".." + r.right] : [];
			})`))
			if err != nil || len(out) != 0 {
				t.Errorf("%s: outside the viewport (%v): %q", name, err, out)
			}
			n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll("#herod-banner button, form.go button").length`))
			if err != nil || n != p.buttons {
				t.Errorf("%s: %d buttons (%v), want %d", name, n, err, p.buttons)
			}
			w, err := chromedp.Run(tctx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth`))
			if err != nil || w > width {
				t.Errorf("%s: %d px wide (%v)", name, w, err)
			}
			screenshot(t, tctx, name)
		}
	}
}

// TestPDFInReplay checks in headless Chromium that an archived PDF
// displays in the framed replay, opened directly and by a link of a
// replayed page, at 1,280 and 390 px: the content frame holds the PDF's bytes (id_) without
// the sandbox attribute, Chromium's PDF viewer (an extension frame) runs
// in it, and the frame's pixels are the viewer's (dark, with the white
// page), not the grey of a blocked frame; the banner names the PDF. Issue
// 35: the frame's sandbox kept the viewer out.
func TestPDFInReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	ui, ts, gw := bannerGateway(t)
	for _, v := range []struct {
		how   string
		width int64
	}{{"link", 1280}, {"direct", 1280}, {"direct", 390}, {"worker", 1280}} {
		how := v.how
		t.Run(fmt.Sprintf("%s-%d", how, v.width), func(t *testing.T) {
			c := newChrome(t) // a browser of its own: its targets are this test's
			tab, cancelTab := chromedp.NewContext(c.ctx)
			defer cancelTab()
			tctx, cancel := context.WithTimeout(tab, 90*time.Second)
			defer cancel()
			if err := chromedp.Do(tctx, chromedp.EmulateViewport(v.width, 800)); err != nil {
				t.Fatal(err)
			}
			if how == "link" {
				if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/"+ts+"/"+bannerSite+"one.html")); err != nil {
					t.Fatal(err)
				}
				testwait.For(t, "page 1 in the frame", 20*time.Second, func() bool { return frameText(tctx, "#v") == "page 1" })
				clickInFrame(t, tctx, "#pdf")
			} else {
				frames := gw.Stats().Frames
				if how == "worker" {
					// The service worker, registered by the home page,
					// writes the framed page: its shell frames the
					// replay, sandboxed, and ui.js reframes the PDF.
					if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/")); err != nil {
						t.Fatal(err)
					}
					state, err := chromedp.Run(tctx, chromedp.Evaluate[string](`new Promise(function (ok) {
						var tries = 0;
						(function poll() {
							navigator.serviceWorker.getRegistration("/web/").then(function (r) {
								var w = r && r.active;
								if (w && w.state === "activated") { ok("activated"); }
								else if (++tries > 200) { ok(r ? "not activated" : "none"); }
								else { setTimeout(poll, 50); }
							});
						})();
					})`, chromedp.EvalAwaitPromise))
					if err != nil || state != "activated" {
						t.Fatalf("service worker after the home page: %q %v", state, err)
					}
					frames = gw.Stats().Frames
				}
				if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/"+ts+"/"+bannerPDF)); err != nil {
					t.Fatal(err)
				}
				if n := gw.Stats().Frames - frames; (how == "worker") != (n == 0) {
					t.Errorf("%s: the gateway wrote %d framed pages", how, n)
				}
			}
			raw := "/web/" + ts + "id_/" + bannerPDF
			var seen []string
			testwait.For(t, "the PDF viewer in the content frame", 20*time.Second, func() bool {
				targets, err := chromedp.Targets(tctx)
				if err != nil {
					return false
				}
				seen = seen[:0]
				var pdf, viewer bool
				for _, tg := range targets {
					seen = append(seen, tg.Type+" "+tg.URL)
					pdf = pdf || (tg.Type == "iframe" && strings.HasSuffix(tg.URL, raw))
					viewer = viewer || (tg.Type == "iframe" && strings.HasPrefix(tg.URL, "chrome-extension://") && strings.HasSuffix(tg.URL, "/index.html"))
				}
				return pdf && viewer
			})
			b, err := readBanner(tctx)
			if err != nil || b.URL != bannerPDF || b.Date != bannerDay.Format(time.DateTime) {
				t.Errorf("banner %+v (%v), want the PDF's", b, err)
			}
			sandbox, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById("herod-frame").hasAttribute("sandbox")`))
			if err != nil || sandbox {
				t.Errorf("the PDF's frame is sandboxed (%v)", err)
			}
			// The viewer draws a dark toolbar and background around the
			// white page; a frame that refuses it is light grey.
			top, err := chromedp.Run(tctx, chromedp.Evaluate[float64](`document.getElementById("herod-frame").getBoundingClientRect().top`))
			if err != nil {
				t.Fatal(err)
			}
			var dark, white float64
			testwait.For(t, "the viewer's pixels", 20*time.Second, func() bool {
				shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
				if err != nil {
					return false
				}
				img, err := png.Decode(bytes.NewReader(shot))
				if err != nil {
					return false
				}
				dark, white = shares(img, image.Rect(0, int(top)+1, img.Bounds().Dx(), img.Bounds().Dy()))
				return dark > 0.5 && white > 0.02
			})
			screenshot(t, tctx, fmt.Sprintf("pdf-%s-%d", how, v.width))
			if how == "link" {
				// The reframing replaced the frame's entry: Back leads
				// to the page with the link, under its banner.
				if err := chromedp.Do(tctx, chromedp.NavigateBack()); err != nil {
					t.Fatal(err)
				}
				testwait.For(t, "Back to page 1", 20*time.Second, func() bool {
					b, err := readBanner(tctx)
					return frameText(tctx, "#v") == "page 1" && err == nil && b.URL == bannerSite+"one.html"
				})
			}
			t.Logf("%s at %d px: %.1f%% of the frame's pixels dark, %.1f%% white; targets %q", how, v.width, 100*dark, 100*white, seen)
		})
	}
}

// shares returns the shares of the pixels of img within r that are dark
// (every channel below a third of full scale) and white (every channel
// above 94%).
func shares(img image.Image, r image.Rectangle) (dark, white float64) {
	r = r.Intersect(img.Bounds())
	if r.Empty() {
		return 0, 0
	}
	var nd, nw int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			switch {
			case cr < 0x5555 && cg < 0x5555 && cb < 0x5555:
				nd++
			case cr > 0xF000 && cg > 0xF000 && cb > 0xF000:
				nw++
			}
		}
	}
	n := float64(r.Dx() * r.Dy())
	return float64(nd) / n, float64(nw) / n
}
