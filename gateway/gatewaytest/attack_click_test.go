package gatewaytest

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/gateway"
)

// TestAttackPagesAfterClick replays the hostile site's click.html framed
// in headless Chromium and clicks it three times, as a reader would click
// a page's "Continue": each click gives the page a user activation, with
// which browsers let a frame open a popup or navigate the top window when
// its sandbox allows. The page tries, one click each, to open a popup to
// the live web, to open another site's capture in a popup (under its
// genuine banner) and rewrite that capture's frame, and to navigate the
// top window to the live web. Every attempt must fail.
func TestAttackPagesAfterClick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live := &counter{}
	liveSrv := httptest.NewServer(live)
	t.Cleanup(liveSrv.Close)
	site, _ := hostileSite(t, liveSrv.URL)
	m := archiveHostile(ctx, t, site)
	ui, _, _, log := serveGateway(t, gateway.Config{Archive: m})

	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancelT := context.WithTimeout(tab, 90*time.Second)
	defer cancelT()
	if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/20240102/"+site.URL+"/click.html")); err != nil {
		t.Fatal(err)
	}
	waitReport := func(name string, d time.Duration) string {
		t.Helper()
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if r, ok := reports(log)[name]; ok {
				return r
			}
		}
		t.Fatalf("no report %q after %v: %v", name, d, reports(log))
		return ""
	}
	waitReport("click-ready", 20*time.Second)
	for step, after := range []string{"click-popup", "popup-forge", ""} {
		// The button fills the content frame, below the banner.
		if err := chromedp.Do(tctx, chromedp.MouseClickXY(400, 350)); err != nil {
			t.Fatal(err)
		}
		waitReport("click-"+string(rune('1'+step)), 10*time.Second)
		if after != "" {
			waitReport(after, 15*time.Second)
		}
	}
	time.Sleep(2 * time.Second) // the top navigation, if it went
	rep := reports(log)
	reached := live.seen()
	attempts := []struct {
		name    string
		blocked bool
		detail  string
	}{
		{"a popup to the live web", !slices.Contains(reached, "/click-popup"), rep["click-popup"]},
		{"rewrite another capture in a popup under its banner", rep["popup-forge"] != "rewritten", rep["popup-forge"]},
		{"navigate the top window to the live web", !slices.Contains(reached, "/click-top"), rep["click-top"]},
	}
	blocked := 0
	for _, a := range attempts {
		if a.blocked {
			blocked++
		} else {
			t.Errorf("attack after a click succeeded: %s (%s)", a.name, a.detail)
		}
		t.Logf("  blocked=%v  %s  %.80s", a.blocked, a.name, a.detail)
	}
	if len(reached) != 0 {
		t.Errorf("requests reached the live host: %q", reached)
	}
	t.Logf("attacks after a click: %d tried, %d blocked; requests reaching the live host: %d", len(attempts), blocked, len(reached))
}
