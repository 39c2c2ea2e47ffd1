package gatewaytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/testwait"
)

// minuteCaptures are the capture times of calendarPage: one the day
// before, then four within one minute, two of them in one second, all
// with sub-second times as the crawler writes them.
var minuteCaptures = func() []time.Time {
	m := time.Date(2026, 11, 28, 10, 15, 0, 0, time.UTC)
	return []time.Time{
		m.Add(-24*time.Hour + 250*time.Millisecond),
		m.Add(3*time.Second + 412*time.Millisecond),
		m.Add(21*time.Second + 5*time.Millisecond),
		m.Add(21*time.Second + 870*time.Millisecond),
		m.Add(58*time.Second + 999*time.Millisecond),
	}
}()

const calendarPage = "http://calendar.example/page.html"

// TestCalendarChipsOpenTheirCapture checks in headless Chromium that each
// chip of a page's list of dates, with four captures in one minute, opens
// its own capture in the framed replay (the frame's text and the banner's
// date), and that the banner's previous and next links walk the captures
// one by one. Issue 35: a 14-digit timestamp was read as hh:mm:ss.000, so
// every chip but the first opened the capture before it.
func TestCalendarChipsOpenTheirCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ctx := context.Background()
	m := NewMem()
	for i, tm := range minuteCaptures {
		body := fmt.Sprintf(`<!doctype html><html><head><title>capture %d</title></head><body><p id="v">capture %d</p></body></html>`, i, i)
		if err := m.Add(ctx, &archive.Capture{URL: calendarPage, Time: tm, Status: 200,
			Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ui, _, _, _ := serveGateway(t, gateway.Config{Archive: m})
	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()

	// The chips, in order, as the list of dates shows them.
	if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/*/"+calendarPage)); err != nil {
		t.Fatal(err)
	}
	chips, err := chromedp.Run(tctx, chromedp.Evaluate[[]struct{ Href, Label string }](`Array.from(document.querySelectorAll(".caps a")).map(a => ({Href: a.href, Label: a.textContent}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(chips) != len(minuteCaptures) {
		t.Fatalf("%d chips, want %d: %+v", len(chips), len(minuteCaptures), chips)
	}
	seen := map[string]bool{}
	for _, ch := range chips {
		if seen[ch.Label] {
			t.Errorf("two chips read %q", ch.Label)
		}
		seen[ch.Label] = true
	}

	// shows waits for the content frame to show capture want and the
	// banner its date.
	shows := func(want int) {
		t.Helper()
		wantText := fmt.Sprintf("capture %d", want)
		wantDate := minuteCaptures[want].UTC().Format(time.DateTime)
		var text, date string
		testwait.For(t, "the frame shows "+wantText, 20*time.Second, func() bool {
			fctx, fcancel := context.WithTimeout(tctx, 2*time.Second)
			defer fcancel()
			frames, err := chromedp.Run(fctx, chromedp.Nodes(chromedp.CSS("#herod-frame")))
			if err != nil || len(frames) == 0 {
				return false
			}
			if text, err = chromedp.Run(fctx, chromedp.Text(chromedp.CSS("#v"), chromedp.FromNode(frames[0]))); err != nil {
				return false
			}
			if date, err = chromedp.Run(fctx, chromedp.Text(chromedp.CSS("#herod-date"))); err != nil {
				return false
			}
			return strings.TrimSpace(text) == wantText && strings.TrimSpace(date) == wantDate
		})
	}
	for i, ch := range chips {
		if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/*/"+calendarPage),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(".caps a:nth-of-type(%d)", i+1)), chromedp.NodeVisible)); err != nil {
			t.Fatalf("click chip %q: %v", ch.Label, err)
		}
		shows(i)
	}
	// From the last capture, the banner's previous link walks back one
	// capture at a time, and its next link forward again.
	for i := len(minuteCaptures) - 2; i >= 0; i-- {
		if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS("#herod-prev"), chromedp.NodeVisible)); err != nil {
			t.Fatalf("click previous to capture %d: %v", i, err)
		}
		shows(i)
	}
	for i := 1; i < len(minuteCaptures); i++ {
		if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS("#herod-next"), chromedp.NodeVisible)); err != nil {
			t.Fatalf("click next to capture %d: %v", i, err)
		}
		shows(i)
	}
}

// checkingMem is a Mem that also knows unchanged checks (gateway.Checker).
type checkingMem struct {
	*Mem
	checks []time.Time
}

func (m checkingMem) Checks(context.Context, string) ([]time.Time, error) { return m.checks, nil }

// TestCalendarShowsChecks checks in headless Chromium the calendar of a
// page checked daily for 30 days and changed 3 times: the counts read
// "Checked 30 times, changed 3 times", 27 days are marked checked
// unchanged, and a click on one opens the version in force that day.
func TestCalendarShowsChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	c := newChrome(t)
	ctx := context.Background()
	m := checkingMem{Mem: NewMem()}
	start := time.Date(2026, 10, 1, 6, 0, 0, 0, time.UTC)
	for d := 0; d < 30; d++ {
		at := start.AddDate(0, 0, d)
		if d%10 != 0 {
			m.checks = append(m.checks, at)
			continue
		}
		body := fmt.Sprintf(`<!doctype html><p id="v">version of day %d</p>`, d)
		if err := m.Add(ctx, &archive.Capture{URL: calendarPage, Time: at, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ui, _, _, _ := serveGateway(t, gateway.Config{Archive: m})
	tab, cancelTab := chromedp.NewContext(c.ctx)
	defer cancelTab()
	tctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(ui+"/web/*/"+calendarPage)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("main p")))
	if err != nil || !strings.Contains(text, "Checked 30 times, changed 3 times") || !strings.Contains(text, "last checked 2026-10-30 06:00") {
		t.Errorf("calendar headline %q (%v)", text, err)
	}
	same, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll("table.grid a.same").length`))
	if err != nil || same != 27 {
		t.Errorf("%d days marked checked unchanged (%v), want 27", same, err)
	}
	// October 15th was checked unchanged: it opens the version of the 11th.
	if err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(`table.grid a.same[href*="/web/20261015"]`), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the version in force on October 15th", 20*time.Second, func() bool {
		fctx, fcancel := context.WithTimeout(tctx, 2*time.Second)
		defer fcancel()
		frames, err := chromedp.Run(fctx, chromedp.Nodes(chromedp.CSS("#herod-frame")))
		if err != nil || len(frames) == 0 {
			return false
		}
		v, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS("#v"), chromedp.FromNode(frames[0])))
		return err == nil && strings.TrimSpace(v) == "version of day 10"
	})
}
