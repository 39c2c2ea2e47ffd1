package gatewaytest

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/gateway"
)

// TestFramedPageByWorker checks the UI origin's service worker in
// Chromium: once a reader has opened a page of the gateway, a replay's
// framed page is written by the worker (the gateway writes none), under
// the UI origin's security headers, with the same banner, which ui.js
// fills in from /api/banner, and the frame replaying the capture; a
// framed replay page embedded by another page is the gateway's, which
// refuses to be framed.
func TestFramedPageByWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	br := newChrome(t)
	ctx, cancel := context.WithTimeout(br.ctx, 2*time.Minute)
	defer cancel()
	liveSrv := httptest.NewServer(&counter{})
	t.Cleanup(liveSrv.Close)
	site, _ := hostileSite(t, liveSrv.URL)
	m := archiveHostile(ctx, t, site)
	ui, content, gw, log := serveGateway(t, gateway.Config{Archive: m})
	tab, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()

	// The home page registers the worker.
	if err := chromedp.Do(tab, chromedp.Navigate(ui+"/")); err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(tab, chromedp.Evaluate[string](`new Promise(function (ok) {
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

	var mu sync.Mutex
	docs := map[string]*network.Response{}
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && e.Type == network.ResourceTypeDocument {
			mu.Lock()
			docs[e.Response.URL] = e.Response
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	frames := gw.Stats().Frames
	const ts = "20240102"
	replay := ui + "/web/" + ts + "/" + site.URL + "/secret.html"
	if err := chromedp.Do(tab, chromedp.Navigate(replay)); err != nil {
		t.Fatal(err)
	}
	if n := gw.Stats().Frames - frames; n != 0 {
		t.Errorf("the gateway wrote %d framed pages, want 0 (the worker's)", n)
	}
	mu.Lock()
	resp := docs[replay]
	mu.Unlock()
	if resp == nil || !resp.FromServiceWorker {
		t.Fatalf("the framed page did not come from the worker: %+v", resp)
	}
	if got, want := resp.Headers["Content-Security-Policy"], "frame-src "+content+";"; got == nil || !strings.Contains(got.(string), want) ||
		!strings.Contains(got.(string), "frame-ancestors 'none'") || resp.Headers["X-Frame-Options"] != "DENY" {
		t.Errorf("the worker's page lacks the UI origin's policy: %v", resp.Headers)
	}
	// The banner fills in, and the frame replays the capture.
	want := map[string]string{
		`document.getElementById("herod-date").textContent`:  "2024-01-01 06:00:00",
		`document.getElementById("herod-dates").textContent`: "1 capture",
		`document.title`: site.URL + "/secret.html · 2024-01-01 06:00:00 · herod",
	}
	deadline := time.Now().Add(20 * time.Second)
	for expr, v := range want {
		for {
			got, err := chromedp.Run(tab, chromedp.Evaluate[string](expr))
			if err == nil && got == v {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %q (%v), want %q", expr, got, err, v)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	replayed := false
	for _, r := range log.all() {
		replayed = replayed || (r.Origin == "content" && strings.HasPrefix(r.URI, "/web/"+ts+"/") && strings.HasSuffix(r.URI, "/secret.html"))
	}
	if !replayed {
		t.Error("the content origin never replayed the frame's capture")
	}

	// The worker writes the navigation's URL as text: a template field
	// of its shell written in the URL stays as it is, markup is escaped.
	odd := ui + "/web/" + ts + "/" + site.URL + `/secret.html?a=@@TS@@&b="><b id=x>`
	if err := chromedp.Do(tab, chromedp.Navigate(odd)); err != nil {
		t.Fatal(err)
	}
	src, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("herod-frame").getAttribute("src") + " " + !!document.getElementById("x")`))
	if want := content + "/web/" + ts + "/" + site.URL + `/secret.html?a=@@TS@@&b=%22%3E%3Cb%20id=x%3E false`; err != nil || src != want {
		t.Errorf("frame of %s: %q (%v), want %q", odd, src, err, want)
	}

	// Another page framing a replay page (here the content origin's: the
	// same site, so the same worker) gets the gateway's page, which no
	// page may frame.
	frames = gw.Stats().Frames
	if err := chromedp.Do(tab, chromedp.Navigate(content+"/static/replay.js")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function () {
		var f = document.createElement("iframe");
		f.src = `+"`"+replay+"`"+`;
		document.documentElement.appendChild(f);
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for gw.Stats().Frames == frames && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if gw.Stats().Frames == frames {
		t.Error("a framed replay page embedded by another page did not come from the gateway")
	}
}
