package gatewaytest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
	h := newHostileTab(t)
	h.open(t, "click.html")
	h.report(t, "click-ready", 20*time.Second)
	for step, after := range []string{"click-popup", "popup-forge", ""} {
		// The button fills the content frame, below the banner.
		if err := chromedp.Do(h.ctx, chromedp.MouseClickXY(400, 350)); err != nil {
			t.Fatal(err)
		}
		h.report(t, "click-"+strconv.Itoa(step+1), 10*time.Second)
		if after != "" {
			h.report(t, after, 15*time.Second)
		}
	}
	time.Sleep(2 * time.Second) // the top navigation, if it went
	rep := reports(h.log)
	reached := h.live.seen()
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
