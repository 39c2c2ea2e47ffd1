package gatewaytest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/sampleweb"
	xhtml "golang.org/x/net/html"
)

// TestSampleWebReplay archives day 0 of the sample web (fetched over
// loopback, without a crawler), replays every HTML page and stylesheet
// through the gateway, and checks what a reader must get: no reference
// leads to the live web, and every embedded object (image, stylesheet,
// script, frame) and every link to a page of the crawl resolves to a
// capture in the archive.
func TestSampleWebReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("serves and fetches a sample web")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	web, m, pages, sheets := archiveDay0(ctx, t)
	gw, err := gateway.New(hostOrigins(gateway.Config{Archive: m}))
	if err != nil {
		t.Fatal(err)
	}
	const ts = "20240102"
	live := web.Seeds()
	checked, embedded := 0, 0
	check := func(from, ref string, embeddedObject bool) {
		if ref == "" || strings.HasPrefix(ref, "#") || strings.HasPrefix(ref, "javascript:") || strings.HasPrefix(ref, "mailto:") {
			return
		}
		for _, h := range live {
			if strings.HasPrefix(ref, strings.TrimSuffix(h, "/")) {
				t.Errorf("%s: reference %s leads to the live web", from, ref)
				return
			}
		}
		rest, ok := strings.CutPrefix(ref, "/web/"+ts)
		if !ok {
			t.Errorf("%s: reference %q is not rewritten into the archive at %s", from, ref, ts)
			return
		}
		target := rest[strings.Index(rest, "/")+1:]
		if i := strings.IndexByte(target, '#'); i >= 0 {
			target = target[:i]
		}
		c, err := canon.Canonical(target)
		if err != nil {
			t.Errorf("%s: rewritten target %q: %v", from, target, err)
			return
		}
		checked++
		vs, _ := m.Versions(ctx, c)
		// Pages link to URLs a polite crawl does not fetch (robots
		// disallowed, session queries): only those may be missing.
		if len(vs) == 0 && (embeddedObject || (!strings.Contains(c, "/private/") && !strings.Contains(c, "?"))) {
			t.Errorf("%s: %s is not in the archive", from, c)
		}
		if embeddedObject {
			embedded++
		}
	}
	for _, p := range pages {
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, contentHost+"/web/"+ts+"/"+p, nil))
		if w.Code != 200 {
			t.Fatalf("%s: status %d", p, w.Code)
		}
		// The banner is the UI origin's, outside the replayed document.
		body := w.Body.Bytes()
		if bytes.Contains(body, []byte(`id="herod-banner"`)) {
			t.Fatalf("%s: banner in the replayed document", p)
		}
		doc, err := xhtml.Parse(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		replayScripts := 0
		for n := range doc.Descendants() {
			if n.Type != xhtml.ElementNode || n.Data == "base" {
				continue
			}
			if n.Data == "script" && len(n.Attr) == 4 && strings.HasPrefix(n.Attr[0].Val, "/static/replay.js?v=") {
				// The gateway's replay script, not a page reference.
				if n.Attr[1].Key != "data-herod-url" || n.Attr[1].Val != p || n.Attr[2].Val != ts || n.Attr[3].Val != uiHost {
					t.Errorf("%s: replay script %v", p, n.Attr)
				}
				replayScripts++
				continue
			}
			for _, a := range n.Attr {
				switch a.Key {
				case "href":
					check(p, a.Val, n.Data == "link")
				case "src":
					check(p, a.Val, true)
				case "srcset":
					for _, c := range strings.Split(a.Val, ",") {
						if f := strings.Fields(c); len(f) > 0 {
							check(p, f[0], true)
						}
					}
				}
			}
		}
		if replayScripts != 1 {
			t.Errorf("%s: %d replay scripts", p, replayScripts)
		}
	}
	cssURL := regexp.MustCompile(`url\(\s*['"]?([^'")\s]+)`)
	for _, s := range sheets {
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, contentHost+"/web/"+ts+"/"+s, nil))
		for _, m := range cssURL.FindAllStringSubmatch(w.Body.String(), -1) {
			if !strings.HasPrefix(m[1], "data:") {
				check(s, m[1], true)
			}
		}
	}
	t.Logf("%d pages, %d stylesheets replayed; %d references checked, %d embedded objects", len(pages), len(sheets), checked, embedded)
	if embedded == 0 {
		t.Error("no embedded object checked")
	}
}

// archiveDay0 serves a sample web of 120 pages and archives day 0 of it
// (fetched over loopback, without a crawler) in a Mem, at 2024-01-01
// 06:00 UTC; it returns the web (closed when the test ends), the archive,
// and the URLs of the HTML pages and stylesheets it holds.
func archiveDay0(ctx context.Context, t *testing.T) (web *sampleweb.Web, m *Mem, pages, sheets []string) {
	t.Helper()
	web = sampleweb.New(sampleweb.Config{Pages: 120, MaxRequests: -1})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	m = NewMem()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	day0 := time.Date(2024, 1, 1, 6, 0, 0, 0, time.UTC)
	for _, u := range web.Reachable(0) {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, &archive.Capture{URL: u, Time: day0, Status: resp.StatusCode, Header: resp.Header, Body: body}); err != nil {
			t.Fatal(err)
		}
		switch ct := resp.Header.Get("Content-Type"); {
		case resp.StatusCode == 200 && strings.HasPrefix(ct, "text/html"):
			pages = append(pages, u)
		case resp.StatusCode == 200 && strings.HasPrefix(ct, "text/css"):
			sheets = append(sheets, u)
		}
	}
	if len(pages) < 100 || len(sheets) == 0 {
		t.Fatalf("only %d pages and %d stylesheets archived", len(pages), len(sheets))
	}
	return web, m, pages, sheets
}

// TestSampleWebInBrowser replays pages of the sample web's day 0 in
// headless Chromium over a real gateway and checks what a reader's
// browser does with them: no Content-Security-Policy refusal (nothing
// tried to reach the live web) and no script error (the replay script
// included) on any page, every request the browser made was for an
// archive path (the server's rewriting reached every reference; none
// needed the Referer redirect) and was answered. It is skipped where no Chromium is installed.
func TestSampleWebInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	browser := browsertest.Find(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, m, pages, _ := archiveDay0(ctx, t)
	ui, _, _, log := serveGateway(t, gateway.Config{Archive: m})
	// Every tenth page: each section and both kinds of page, in ~5 s.
	for i := 0; i < len(pages); i += 10 {
		dom, console := browser.Load(t, ui+"/web/20240102/"+pages[i])
		if len(console) != 0 {
			t.Errorf("%s: console %q", pages[i], console)
		}
		if !strings.Contains(dom, `id="herod-banner"`) || !strings.Contains(dom, `id="herod-frame"`) {
			t.Errorf("%s: no banner or no frame in the DOM", pages[i])
		}
	}
	failed := map[string]int{}
	var outside []string
	reqs := log.all()
	requests, content := len(reqs), 0
	for _, r := range reqs {
		path, _, _ := strings.Cut(r.URI, "?")
		// The browser asks for /favicon.ico on its own; the Referer
		// sends it to the archived site, which has none.
		favicon := strings.HasSuffix(path, "/favicon.ico")
		if r.Status >= 400 && !favicon {
			failed[r.Origin+" "+r.URI] = r.Status
		}
		if r.Origin == "ui" {
			// The framed page, its script, the service worker it
			// registers, and the banner.
			if !strings.HasPrefix(path, "/web/") && path != "/static/ui.js" && path != "/sw.js" && path != "/api/banner" && !favicon {
				outside = append(outside, "ui "+r.URI)
			}
			continue
		}
		content++
		// Everything the pages reference was rewritten on the server:
		// nothing may need the Referer redirect.
		if !strings.HasPrefix(path, "/web/") && path != "/static/replay.js" && !favicon {
			outside = append(outside, r.URI)
		}
	}
	if content < len(pages)/10 {
		t.Errorf("only %d requests reached the content origin", content)
	}
	if len(failed) != 0 {
		t.Errorf("%d of %d requests failed: %v", len(failed), requests, failed)
	}
	if len(outside) != 0 {
		t.Errorf("%d of %d requests outside the archive's paths (not rewritten): %q", len(outside), requests, outside)
	}
	t.Logf("%d pages, %d requests", (len(pages)+9)/10, requests)
}
