package gatewaytest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/testwait"
)

// hostileTab is the hostile site archived, a framed gateway replaying it
// and a tab of headless Chromium, for the tests that act in a page
// (click, replay several pages in one tab) rather than load it.
type hostileTab struct {
	chrome   *chrome
	ctx      context.Context // the tab's, with its deadline
	ui       string          // the gateway's UI origin
	site     *httptest.Server
	siteHits *counter // every request the hostile site served
	archived int      // how many of them archiving took
	live     *counter // the live web, which nothing should reach
	log      *reqLog  // what the gateway served
}

// newHostileTab starts them, or skips t where no browser can run.
func newHostileTab(t *testing.T) *hostileTab {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a browser")
	}
	h := &hostileTab{chrome: newChrome(t), live: &counter{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	liveSrv := httptest.NewServer(h.live)
	t.Cleanup(liveSrv.Close)
	h.site, h.siteHits = hostileSite(t, liveSrv.URL)
	m := archiveHostile(ctx, t, h.site)
	h.archived = len(h.siteHits.seen())
	h.ui, _, _, h.log = serveGateway(t, gateway.Config{Archive: m})
	tab, cancelTab := chromedp.NewContext(h.chrome.ctx)
	tctx, cancelT := context.WithTimeout(tab, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelTab() })
	h.ctx = tctx
	return h
}

// hostileTS is the timestamp hostileTab replays the site at (archived
// the day before).
const hostileTS = "20240102"

// open navigates the tab to the framed replay of the hostile site's page p.
func (h *hostileTab) open(t *testing.T, p string) {
	t.Helper()
	if err := chromedp.Do(h.ctx, chromedp.Navigate(h.ui+"/web/"+hostileTS+"/"+h.site.URL+"/"+p)); err != nil {
		t.Fatal(err)
	}
}

// report waits up to d for the hostile pages' report name (reports) and
// returns its result.
func (h *hostileTab) report(t *testing.T, name string, d time.Duration) string {
	t.Helper()
	var r string
	testwait.For(t, "report "+name, d, func() (ok bool) {
		r, ok = reports(h.log)[name]
		return ok
	})
	return r
}
