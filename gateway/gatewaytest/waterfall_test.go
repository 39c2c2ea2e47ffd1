package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// waterfall opens target in a new tab (a fresh browser context when cold;
// service workers bypassed) and returns its network waterfall: for each
// request of the tab and its frames, when it was sent, when its response
// began and when it ended, in ms from the first request, after the top
// document's Navigation Timing.
func (c *chrome) waterfall(tb testing.TB, target string, cold bool) string {
	tb.Helper()
	var opts []chromedp.ContextOption
	if cold {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	tab, cancel := chromedp.NewContext(c.ctx, opts...)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 60*time.Second)
	defer cancelT()
	if _, err := chromedp.Call(ctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}); err != nil {
		tb.Fatal(err)
	}
	type req struct {
		url              string
		sent, resp, done float64
	}
	var mu sync.Mutex
	var reqs []*req
	byID := map[network.RequestID]*req{}
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			r := &req{url: e.Request.URL, sent: float64(e.Timestamp)}
			byID[e.RequestID] = r
			reqs = append(reqs, r)
		case *network.EventResponseReceived:
			if r := byID[e.RequestID]; r != nil {
				r.resp = float64(e.Timestamp)
			}
		case *network.EventLoadingFinished:
			if r := byID[e.RequestID]; r != nil {
				r.done = float64(e.Timestamp)
			}
		}
	}); err != nil {
		tb.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(target)); err != nil {
		tb.Fatalf("load %s: %v", target, err)
	}
	time.Sleep(500 * time.Millisecond)
	nav, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var n=performance.getEntriesByType("navigation")[0];`+
		`return "response "+n.responseStart.toFixed(0)+"-"+n.responseEnd.toFixed(0)+" ms, DOMContentLoaded "+`+
		`n.domContentLoadedEventEnd.toFixed(0)+" ms, load event end "+n.loadEventEnd.toFixed(0)+" ms"})()`))
	if err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var b strings.Builder
	b.WriteString(nav + "\n")
	if len(reqs) == 0 {
		return b.String()
	}
	t0 := reqs[0].sent
	at := func(t float64) float64 {
		if t == 0 {
			return -1
		}
		return (t - t0) * 1000
	}
	slices.SortStableFunc(reqs, func(x, y *req) int { return int((x.sent - y.sent) * 1e6) })
	for _, r := range reqs {
		u := r.url
		if len(u) > 90 {
			u = u[:90] + "…"
		}
		fmt.Fprintf(&b, "  %6.0f %6.0f %6.0f %s\n", at(r.sent), at(r.resp), at(r.done), u)
	}
	return b.String()
}

// TestReplayWaterfall prints the network waterfall (request sent,
// response started, response ended, ms) of HEROD_VIEWS (default 3)
// archived pages each loaded single-origin, in a bare frame and framed
// (the service worker bypassed), through a link of the first of
// HEROD_RTT_MS (default 0) ms, in one browser context (HEROD_COLD set: a
// fresh one each view). It runs when HEROD_REPLAY_WATERFALL is set: it
// shows where a view's time goes, which TestReplayLatency only totals.
func TestReplayWaterfall(t *testing.T) {
	if os.Getenv("HEROD_REPLAY_WATERFALL") == "" {
		t.Skip("the replay waterfall runs when HEROD_REPLAY_WATERFALL is set")
	}
	rtts, views := latencyEnv(t)
	if os.Getenv("HEROD_VIEWS") == "" {
		views = 3
	}
	br := newChrome(t)
	m, pages := benchPages(t)
	const ts = "20240102"
	delay := time.Duration(rtts[0]) * time.Millisecond / 2
	single := delayedSingleOrigin(t, m, delay)
	framed, _ := delayedGateway(t, m, delay)
	cold := os.Getenv("HEROD_COLD") != ""
	for i := range views {
		p := pages[(i*7+1)%len(pages)]
		for _, w := range []struct{ name, base string }{{"single-origin", single}, {"bare frame", framed + "/bare"}, {"framed", framed}} {
			out := fmt.Sprintf("waterfall: %s, rtt %d ms, %s: %s", p, rtts[0], w.name, br.waterfall(t, w.base+"/web/"+ts+"/"+p, cold))
			t.Log(out)
			fmt.Println(out)
		}
	}
}
