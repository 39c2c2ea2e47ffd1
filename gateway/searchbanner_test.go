package gateway

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/search/searchtest"
)

// submitsBanner is an archived page whose script types a word into the
// frameless banner's search box and submits it, as a reader pressing
// Enter does.
const submitsBanner = `<!DOCTYPE html><html><head><title>Submits</title></head><body><p>lighthouse keepers</p>
<script>
var f = document.querySelector('#herod-banner form[role=search]');
f.elements.q.value = 'lighthouse';
f.submit();
</script></body></html>`

// clicksDates is an archived page whose script follows the frameless
// banner's link to the capture's dates.
const clicksDates = `<!DOCTYPE html><html><head><title>Clicks</title></head><body><p>dates</p>
<script>
var links = document.querySelectorAll('#herod-banner a');
links[links.length - 1].click();
</script></body></html>`

// TestFramelessBannerSearch: the banner frameless replay inserts into the
// page holds a search box, as of the capture shown, that submits to the
// UI origin's /search (absolute: a root-relative URL in a replayed page
// means the archived site's), and its home and dates links lead to the
// UI origin.
func TestFramelessBannerSearch(t *testing.T) {
	s, c := searchFixture(t, func(c *Config) { c.Frameless = true })
	day2 := c.Day(2).UTC().Format(TimestampLayout)
	body := get(t, s, "/web/"+day2+"/"+c.Changed).Body.String()
	for _, want := range []string{
		`<a href="` + uiOrigin + `/" `,
		`<a href="` + uiOrigin + `/web/*/` + c.Changed + `" `,
		`<form method="get" action="` + uiOrigin + `/search" role="search"`,
		`>search <input type="search" name="q"`,
		`<input type="hidden" name="at" value="` + day2 + `">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("frameless banner lacks %s\n%s", want, body)
		}
	}
	// The content origin's policy lets that form, and no other, leave
	// the archive.
	if csp := contentCSP(uiOrigin); !strings.Contains(csp, "form-action 'self' "+uiOrigin+"/search;") {
		t.Errorf("content CSP %q does not let the banner search", csp)
	}
}

// TestFramelessBannerSearchInBrowser submits the frameless banner's
// search box in headless Chromium: the UI origin is asked /search for
// the word as of the capture, and the browser refuses nothing (the
// content origin's form-action lets it through).
func TestFramelessBannerSearchInBrowser(t *testing.T) {
	browser := browsertest.Find(t)
	const page, dates = "http://site0.example/submits.html", "http://site0.example/dates.html"
	day2 := searchtest.New(1, 20).Day(2) // searchArchive's corpus
	html := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	arc, st, _ := searchArchive(t, []archive.Capture{
		{URL: page, Time: day2, Status: 200, Header: html, Body: []byte(submitsBanner)},
		{URL: dates, Time: day2, Status: 200, Header: html, Body: []byte(clicksDates)},
	})
	_, content, log := serveOrigins(t, arc, func(c *Config) { c.Search = st; c.Frameless = true })
	ts := day2.UTC().Format(TimestampLayout)
	for _, tc := range []struct{ page, want string }{
		// The form's fields go in document order: q, then at.
		{page, "/search?q=lighthouse&at=" + ts},
		{dates, "/web/*/" + dates},
	} {
		_, messages := browser.Load(t, content+"/web/"+ts+"/"+tc.page)
		if err := testwait.Until(10*time.Second, func() bool { return slices.Contains(log.uris("ui"), tc.want) }); err != nil {
			t.Fatalf("the UI origin was not asked %s: %v\nui: %v\ncontent: %v\nconsole: %q", tc.want, err, log.uris("ui"), log.uris("content"), messages)
		}
		for _, m := range messages {
			if strings.Contains(m, "Refused") || strings.Contains(m, "Content Security Policy") {
				t.Errorf("the browser refused: %s", m)
			}
		}
	}
}
