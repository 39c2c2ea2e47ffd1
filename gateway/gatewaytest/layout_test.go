package gatewaytest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/internal/testwait"
)

// TestOperatorPagesFit checks in headless Chromium at 1,280 px that the
// /ring page of a ring with dead and departed nodes, the HTML status page
// and the calendar of a page captured daily for 400 days have no
// horizontal overflow, and that the calendar's year overview links to
// its months. HEROD_SCREENSHOTS=DIR keeps a PNG of each page.
func TestOperatorPagesFit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ctx := context.Background()
	m := NewMem()
	start := time.Date(2025, 10, 1, 6, 0, 0, 0, time.UTC)
	for d := 0; d < 400; d++ {
		if err := m.Add(ctx, &archive.Capture{URL: calendarPage, Time: start.AddDate(0, 0, d).Add(time.Duration(d) * time.Second), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<p>day %d</p>", d%3))}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	peer := func(s string) string { return "12D3KooW" + s + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + s }
	view := ringview.View{Self: peer("A"), K: 3}
	for i, st := range []string{"up", "up", "up", "unreachable", "dead", "departed"} {
		p := ringview.PeerSummary{Peer: peer(string(rune('A' + i))), Addr: fmt.Sprintf("203.0.113.%d:4001", 10+i), State: st, Reach: "listen",
			Day: 20785, DayStart: now.Truncate(24 * time.Hour), Queued: 123456, Fetched: 987654, Stored: 456789, Errors: 12345,
			Versions: 12345678, Bytes: 987654321098, BelowK: 4321, LagSec: 12345}
		if st == "dead" || st == "departed" {
			p.Since = now.Add(-time.Duration(i) * time.Hour)
		}
		view.Peers = append(view.Peers, p)
	}
	status := map[string]any{"peer": peer("A"), "multiaddr": "/ip4/203.0.113.10/tcp/4001/p2p/" + peer("A"),
		"archive": map[string]any{"versions": 12345678, "bytes": 987654321098}, "wire": []map[string]any{{"protocol": "/herod/replicate/1.0.0", "in": 123456789, "out": 987654321}}}
	ui, _, _, _ := serveGateway(t, gateway.Config{Archive: m, PublicStatus: true,
		Ring:   func(context.Context) ringview.View { return view },
		Status: func(context.Context) any { return status }})
	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, path string }{{"ring", "/ring"}, {"status", "/status"}, {"calendar", "/web/*/" + calendarPage}} {
		if err := chromedp.Do(tctx, chromedp.Navigate(ui+p.path)); err != nil {
			t.Fatal(err)
		}
		w, err := chromedp.Run(tctx, chromedp.Evaluate[int](`Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)`))
		if err != nil {
			t.Fatal(err)
		}
		if w > 1280 {
			t.Errorf("%s is %d px wide at a 1,280 px window", p.name, w)
		}
		// A table that scrolls inside its box overflows too.
		inner, err := chromedp.Run(tctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll(".wide")).filter(e => e.scrollWidth > e.clientWidth + 1).length`))
		if err != nil || inner != 0 {
			t.Errorf("%s: %d tables wider than their box (%v)", p.name, inner, err)
		}
		if dir := os.Getenv("HEROD_SCREENSHOTS"); dir != "" {
			if err := chromedp.Do(tctx, chromedp.EmulateViewport(1280, 1400)); err != nil {
				t.Fatal(err)
			}
			shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, p.name+".png"), shot, 0o644)
			}
			if err != nil {
				t.Error(err)
			}
			_ = chromedp.Do(tctx, chromedp.EmulateViewport(1280, 900))
		}
	}
	// The year overview's bar of January 2026 leads to that month, folded
	// in so long a history, and unfolds it (ui.js).
	if open, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById("m2026-01").open`)); err != nil || open {
		t.Fatalf("January 2026 unfolded before the click: %v %v", open, err)
	}
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(`a[href="#m2026-01"]`), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "January 2026 unfolded", 10*time.Second, func() bool {
		open, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`location.hash === "#m2026-01" && document.getElementById("m2026-01").open`))
		return err == nil && open
	})
}
