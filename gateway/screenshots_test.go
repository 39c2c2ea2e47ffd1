package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
)

// shotPNG stands for a screenshot: the gateway does not look inside it.
const shotPNG = "\x89PNG\r\n\x1a\nSHOT"

// browserArchive holds page in three versions: fetched (2021), captured
// in a browser with its screenshot 2 s later (2022), and captured in a
// browser without one (2023).
func browserArchive(t *testing.T) *fakeArchive {
	f := newFake()
	f.add(t, page, "20210101000000", 200, "text/html", "<html><body>fetched</body></html>")
	for _, ts := range []string{"20220101000000", "20230101000000"} {
		tm, _ := time.Parse(TimestampLayout, ts)
		f.put(t, &archive.Capture{URL: page, Time: tm, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
			Body: []byte("<html><body>rendered " + ts + "</body></html>"), Browser: true})
	}
	shot := archive.ScreenshotCapture(page, time.Date(2022, 1, 1, 0, 0, 2, 0, time.UTC), []byte(shotPNG))
	f.put(t, &shot)
	return f
}

// TestBrowserCaptureShown: a capture made in a browser says so in the
// banner (framed, its JSON, frameless) and the CDX API; a fetched one
// does not.
func TestBrowserCaptureShown(t *testing.T) {
	const marker = "captured in a browser"
	s := newServer(t, browserArchive(t))
	for ts, want := range map[string]bool{"2021": false, "2022": true, "2023": true} {
		if got := strings.Contains(getUI(t, s, "/web/"+ts+"/"+page).Body.String(), marker); got != want {
			t.Errorf("framed banner of %s: says %q: %v, want %v", ts, marker, got, want)
		}
		var b bannerData
		if err := json.Unmarshal(getUI(t, s, "/api/banner?url="+page+"&ts="+ts).Body.Bytes(), &b); err != nil {
			t.Fatal(err)
		}
		if got := b.Provenance == marker; got != want {
			t.Errorf("banner JSON of %s: provenance %q", ts, b.Provenance)
		}
	}
	frameless := newServer(t, browserArchive(t), func(c *Config) { c.Frameless = true })
	if body := getContent(t, frameless, "/web/2022/"+page).Body.String(); !strings.Contains(body, marker) || !strings.Contains(body, "rendered") {
		t.Errorf("frameless replay lacks the marker: %s", body)
	}

	w := getUI(t, s, "/cdx?url="+page+"&output=json&fl=timestamp,browser")
	if got := strings.Join(strings.Fields(w.Body.String()), ""); got != `[["timestamp","browser"],["20210101000000",""],["20220101000000","1"],["20230101000000","1"]]` {
		t.Errorf("CDX json: %s", w.Body)
	}
	w = getUI(t, s, "/cdx?url="+page+"&filter=browser:1&fl=timestamp")
	if got := w.Body.String(); got != "20220101000000\n20230101000000\n" {
		t.Errorf("CDX filter=browser:1: %q", got)
	}
	lines := strings.Split(strings.TrimSpace(getUI(t, s, "/cdx?url="+page).Body.String()), "\n")
	if len(lines) != 3 || strings.Contains(lines[0], `"browser"`) || !strings.Contains(lines[1], `"browser":"1"`) {
		t.Errorf("CDXJ lines: %q", lines)
	}
}

// TestScreenshotServed: a page's screenshot replays from the content
// origin under its urn:view: URL, the list of dates shows it as the
// thumbnail of its capture only, and access rules that hide the page
// hide its screenshot.
func TestScreenshotServed(t *testing.T) {
	s := newServer(t, browserArchive(t))
	shot := "/web/20220101000002id_/urn:view:" + page
	w := getContent(t, s, shot)
	if w.Code != 200 || w.Header().Get("Content-Type") != "image/png" || w.Body.String() != shotPNG {
		t.Fatalf("screenshot replay: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if w := getContent(t, s, "/web/2022id_/urn:view:HTTP://EXAMPLE.com"); w.Code != 200 || w.Body.String() != shotPNG {
		t.Errorf("screenshot under a non-canonical page URL: %d", w.Code)
	}

	dates := getUI(t, s, "/web/*/"+page)
	body := dates.Body.String()
	img := `<img src="` + contentOrigin + shot + `"`
	if strings.Count(body, "<img ") != 1 || !strings.Contains(body, img) {
		t.Errorf("list of dates: want one thumbnail %s:\n%s", img, body)
	}
	if n := strings.Count(body, "captured in a browser"); n != 2 {
		t.Errorf("list of dates marks %d captures as captured in a browser, want 2", n)
	}
	if csp := dates.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: "+contentOrigin+";") {
		t.Errorf("UI CSP does not let the thumbnails load: %s", csp)
	}

	// No browser capture: the screenshots are not even asked for.
	plain := &askedArchive{fakeArchive: sampleArchive(t)}
	getUI(t, newServer(t, plain), "/web/*/"+page)
	if plain.asked[archive.ScreenshotURL(page)] {
		t.Error("the list of dates of a page never captured in a browser asked for its screenshots")
	}

	blocked := newServer(t, browserArchive(t), func(c *Config) {
		c.Access = newTableAccess(c.Now, access.Rule{URL: page, Exact: true, Action: access.Block})
	})
	if w := getContent(t, blocked, shot); w.Code == 200 {
		t.Errorf("screenshot of a blocked page: %d, want it blocked", w.Code)
	}
}

// askedArchive records the URLs whose versions were asked for.
type askedArchive struct {
	*fakeArchive
	asked map[string]bool
}

func (c *askedArchive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	if c.asked == nil {
		c.asked = map[string]bool{}
	}
	c.asked[url] = true
	return c.fakeArchive.Versions(ctx, url)
}
