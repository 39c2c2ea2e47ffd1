package gatewaytest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/gateway"
)

// TestAttackPagesLeaveNoState checks in headless Chromium that a replayed
// page finds no state another replay stored, though every archived site
// shares the content origin: the hostile site's poison.html stores
// values through its own localStorage, sessionStorage and document.cookie
// and through a fresh realm's (the origin's real ones); victim.html,
// replayed next in the same tab, must find none of them, and still read
// back what it stores itself.
func TestAttackPagesLeaveNoState(t *testing.T) {
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
	waitReport := func(name string) string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if r, ok := reports(log)[name]; ok {
				return r
			}
		}
		t.Fatalf("no report %q: %v", name, reports(log))
		return ""
	}
	for _, p := range []string{"poison.html", "victim.html"} {
		if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/20240102/"+site.URL+"/"+p)); err != nil {
			t.Fatal(err)
		}
		if p == "poison.html" {
			waitReport("poisoned")
		}
	}
	// localStorage and sessionStorage lengths, the poisoned items and the
	// cookies: nothing.
	if got := waitReport("victim-found"); got != "0|0||||" {
		t.Errorf("the next replay found stored state: %q", got)
	}
	// What it stores itself reads back (an expired cookie is gone).
	if got := waitReport("victim-own"); got != "1|2|2|mine,other|mine=1" {
		t.Errorf("the page's own storage: %q, want %q", got, "1|2|2|mine,other|mine=1")
	}
}
