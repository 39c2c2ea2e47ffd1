package gatewaytest

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/internal/testwait"
)

// TestFrameOpensThroughUI checks in headless Chromium that what an
// archived page opens outside its frame, which the frame's sandbox
// forbids, still opens, from the archive, through the framed page
// (ui.js): a link to a new tab, window.open on a click, a form whose
// target is a new tab, a link to the top window, and a link on the
// a link to a page not archived, which the UI's own page shows in place
// of the framed page. Each new tab holds the framed replay of the link's
// capture and has no opener; the top window moves to the framed replay
// (or to the UI's page, whose links lead on).
func TestFrameOpensThroughUI(t *testing.T) {
	h := newHostileTab(t)
	ui, site, log, tctx := h.ui, h.site, h.log, h.ctx
	const ts = hostileTS

	// framed replays of landing.html?via=<via> the content origin served
	// to a frame: one per opening.
	framed := func(via string) int {
		n := 0
		for _, r := range log.all() {
			if r.Origin == "content" && strings.HasSuffix(r.URI, "/landing.html?via="+via) && r.Header.Get("Sec-Fetch-Dest") == "iframe" {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		testwait.For(t, what, 15*time.Second, ok)
	}
	clickInFrame := func(sel string) {
		t.Helper()
		frames, err := chromedp.Run(tctx, chromedp.Nodes(chromedp.CSS("#herod-frame")))
		if err != nil || len(frames) == 0 {
			t.Fatalf("no content frame: %v", err)
		}
		if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(sel), chromedp.FromNode(frames[0]))); err != nil {
			t.Fatalf("click %s in the frame: %v", sel, err)
		}
	}
	// location is the top window's address once its document has loaded:
	// "" while it loads, or navigates (the evaluation then fails), as the
	// test acts on the page next.
	location := func() string {
		href, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.readyState === "complete" ? location.href : ""`))
		if err != nil {
			return ""
		}
		return href
	}
	h.open(t, "opens.html")
	for _, x := range []struct{ sel, via string }{{"#blank", "blank"}, {"#open", "open"}, {"#submit", "form"}} {
		clickInFrame(x.sel)
		waitFor(x.sel+" opens a framed replay", func() bool { return framed(x.via) == 1 })
	}
	// The new tabs: framed replays on the UI origin, with no opener.
	targets, err := chromedp.Targets(tctx)
	if err != nil {
		t.Fatal(err)
	}
	tabs := 0
	for _, ti := range targets {
		if ti.Type != "page" || !strings.HasPrefix(ti.URL, ui+"/web/"+ts+"/"+site.URL+"/landing.html?via=") {
			continue
		}
		tabs++
		nt, cancelNT := chromedp.NewContext(h.chrome.ctx, chromedp.WithTargetID(ti.TargetID))
		noOpener, err := chromedp.Run(nt, chromedp.Evaluate[bool](`window.opener === null && document.getElementById("herod-frame") !== null`))
		cancelNT()
		if err != nil || !noOpener {
			t.Errorf("new tab %s: framed with no opener = %v (%v)", ti.URL, noOpener, err)
		}
	}
	if tabs != 3 {
		t.Errorf("%d new tabs of framed replays, want 3: %v", tabs, targets)
	}
	// A link to the top window moves the top window to the framed replay.
	clickInFrame("#top")
	want := ui + "/web/" + ts + "/" + site.URL + "/landing.html?via=top"
	waitFor("the top window moves", func() bool { return location() == want && framed("top") == 1 })

	// A link to a page not archived: the frame's 404 asks the framed page
	// for the UI's own page in its place, top-level, whose links lead on.
	h.open(t, "opens.html")
	clickInFrame("#missing")
	missing := ui + "/web/*/" + site.URL + "/missing.html"
	waitFor("the UI's page for the missing page", func() bool { return location() == missing })
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(`a[href^="/web/*/https:"]`), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	other := ui + "/web/*/https://" + strings.TrimPrefix(site.URL, "http://") + "/missing.html"
	waitFor("the error page's link moves the top window", func() bool { return location() == other })

	if n := len(h.siteHits.seen()); n != h.archived {
		t.Errorf("%d requests reached the archived site", n-h.archived)
	}
	if p := h.live.seen(); len(p) != 0 {
		t.Errorf("requests reached the live host: %q", p)
	}
}
