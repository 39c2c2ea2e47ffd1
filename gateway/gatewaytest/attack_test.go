package gatewaytest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/browsertest"
)

// hostilePages are the pages of the hostile site (testdata/hostile) that
// TestAttackPages loads in a browser, framed by the gateway.
var hostilePages = []string{"attacks.html", "forge.html", "nav.html", "refresh.html", "selfnav.html"}

// hostileHeaders are what the hostile site answers attacks.html with: each
// would act on the gateway's origin if the gateway passed it on.
var hostileHeaders = map[string]string{
	"Set-Cookie":                "archived=1; Path=/",
	"Content-Security-Policy":   "default-src * 'unsafe-inline' 'unsafe-eval'",
	"Strict-Transport-Security": "max-age=31536000; includeSubDomains",
	"Clear-Site-Data":           `"*"`,
	"Refresh":                   "1; url=http://LIVEHOST/header-refresh",
	"Link":                      "<http://LIVEHOST/preload.css>; rel=preload; as=style",
	"Service-Worker-Allowed":    "/",
}

// counter is a live web host that counts what reaches it.
type counter struct {
	mu    sync.Mutex
	paths []string
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	io.WriteString(w, "live")
}

func (c *counter) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// hostileSite serves testdata/hostile with LIVE and LIVEHOST standing for
// the live host, as a site whose author wants to attack the archive's
// readers would.
func hostileSite(t *testing.T, live string) (*httptest.Server, *counter) {
	t.Helper()
	liveHost := strings.TrimPrefix(live, "http://")
	c := &counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		if name == "tool.exe" {
			w.Header().Set("Content-Type", "application/octet-stream")
			io.WriteString(w, "MZ\x90\x00 not really a program")
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", "hostile", filepath.Base(name)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		body := strings.NewReplacer("LIVEHOST", liveHost, "LIVE", live).Replace(string(b))
		switch filepath.Ext(name) {
		case ".js":
			w.Header().Set("Content-Type", "text/javascript")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		if name == "attacks.html" {
			for k, v := range hostileHeaders {
				w.Header().Set(k, strings.ReplaceAll(v, "LIVEHOST", liveHost))
			}
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

// archiveHostile fetches every page of the hostile site into a Mem, as the
// crawler would have, and returns it with the site's base URL.
func archiveHostile(ctx context.Context, t *testing.T, site *httptest.Server) *Mem {
	t.Helper()
	m := NewMem()
	day0 := time.Date(2024, 1, 1, 6, 0, 0, 0, time.UTC)
	for _, p := range append(slices.Clone(hostilePages), "", "common.js", "secret.html", "sw.js", "tool.exe", "moves.html", "push.html", "click.html", "opens.html", "poison.html", "victim.html",
		"landing.html?via=blank", "landing.html?via=open", "landing.html?via=top", "landing.html?via=form") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, site.URL+"/"+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", p, resp.StatusCode, err)
		}
		if err := m.Add(ctx, &archive.Capture{URL: site.URL + "/" + p, Time: day0, Status: 200, Header: resp.Header, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// reports returns what the hostile pages reported, by attack name: the
// /report?a=<name>&r=<result> requests the content origin answered.
func reports(log *reqLog) map[string]string {
	out := map[string]string{}
	for _, r := range log.all() {
		i := strings.Index(r.URI, "/report?")
		if r.Origin != "content" || i < 0 {
			continue
		}
		q, err := url.ParseQuery(r.URI[i+len("/report?"):])
		if err == nil {
			out[q.Get("a")] = q.Get("r")
		}
	}
	return out
}

// TestAttackPages archives a hostile site whose pages attack the archive's
// readers, the gateway and its operator, replays each page framed by the
// gateway in headless Chromium, and checks that every attack failed (and
// that the pages otherwise replayed: their scripts ran and reported).
// The live web is another loopback server that counts what reaches it.
// It is skipped where no Chromium is installed.
func TestAttackPages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	browser := browsertest.Find(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	live := &counter{}
	liveSrv := httptest.NewServer(live)
	t.Cleanup(liveSrv.Close)
	site, siteHits := hostileSite(t, liveSrv.URL)
	m := archiveHostile(ctx, t, site)
	archivedHits := len(siteHits.seen())

	var seeds atomic.Int64
	const token = "test-admin-token"
	ui, _, _, log := serveGateway(t, gateway.Config{
		Archive:    m,
		Status:     func(context.Context) any { return map[string]string{"secret": "STATUS-SECRET"} },
		AdminToken: token,
		Seed: func(context.Context, []string) ([]gateway.SeedResult, error) {
			seeds.Add(1)
			return nil, nil
		},
	})
	const ts = "20240102"
	doms := map[string]string{}
	for _, p := range hostilePages {
		dom, console := browser.LoadWithin(t, ui+"/web/"+ts+"/"+site.URL+"/"+p, 30*time.Second)
		doms[p] = dom
		t.Logf("%s: %d console messages (CSP refusals among them)", p, len(console))
		if testing.Verbose() {
			for _, c := range console {
				t.Logf("  %.300s", c)
			}
		}
	}
	rep := reports(log)
	hostURL := site.URL + "/"

	type attack struct {
		name    string
		blocked bool
		detail  string
	}
	var attacks []attack
	check := func(name string, blocked bool, detail string) {
		attacks = append(attacks, attack{name, blocked, detail})
		if !blocked {
			t.Errorf("attack %s succeeded: %s", name, detail)
		}
	}
	is := func(name string, ok ...string) bool { return slices.Contains(ok, rep[name]) }
	uiReqs := func(path string) int {
		n := 0
		for _, r := range log.all() {
			if r.Origin == "ui" && strings.HasPrefix(r.URI, path) {
				n++
			}
		}
		return n
	}
	livePaths := live.seen()
	reached := func(p string) bool { return slices.Contains(livePaths, p) }

	// The pages replayed: each ran its scripts to the end, framed.
	// refresh.html's meta refresh (2 s) leads, inside the archive, to a URL
	// it has no capture of, whose UI page then takes the replay's place
	// (ui.js, herod:open "replace"); whether the browser's DOM dump comes
	// before, during or after that depends on the machine's load. So its
	// frame is read from the gateway's log instead: the content origin
	// served it to the frame, and then the refresh's target.
	framedAt := func(u string) bool {
		for _, r := range log.all() {
			if r.Origin == "content" && r.URI == "/web/"+ts+"/"+u && r.Header.Get("Sec-Fetch-Dest") == "iframe" {
				return true
			}
		}
		return false
	}
	for p, done := range map[string]string{"attacks.html": "done", "forge.html": "forge-done", "nav.html": "nav-done", "refresh.html": "meta-csp"} {
		framed := strings.Contains(doms[p], `id="herod-frame"`)
		if p == "refresh.html" {
			framed = framedAt(site.URL + "/" + p)
		}
		if rep[done] == "" || !framed {
			t.Errorf("%s did not replay: reports %v\nits DOM: %.3000s", p, rep, doms[p])
		}
	}
	if !framedAt(liveSrv.URL + "/refresh") {
		t.Errorf("refresh.html's meta refresh was not followed inside the archive")
	}

	// The gateway's status and pages, read from the archived page.
	// (The page's fetch is rewritten into the archive, which has no
	// capture of the gateway's status: a 404 page of the archive.)
	check("read /api/status (page fetch)", !strings.Contains(rep["status-fetch"], "STATUS-SECRET") && uiReqs("/api/status") == 0, rep["status-fetch"])
	check("read /api/status (native fetch of a fresh realm)", is("status-native", "blocked"), rep["status-native"])
	check("read a UI page (dates list)", is("ui-page", "blocked"), rep["ui-page"])
	// The admin endpoint.
	check("POST /api/seed (no-cors text/plain fetch)", seeds.Load() == 0 && uiReqs("/api/seed") == 0, rep["seed-fetch"])
	check("POST /api/seed (form submission)", seeds.Load() == 0, rep["seed-form"])
	// Cookies.
	archivedCookie := false
	for _, r := range log.all() {
		c := r.Header.Get("Cookie")
		if strings.Contains(c, "archived=1") || strings.Contains(c, "metacookie=1") {
			archivedCookie = true
		}
	}
	check("archived Set-Cookie header reaches the browser", !archivedCookie && !strings.Contains(rep["cookie"], "archived"), rep["cookie"])
	check("<meta http-equiv=Set-Cookie>", !strings.Contains(rep["meta-cookie"], "metacookie"), rep["meta-cookie"])
	// Exfiltration to the live web.
	for _, x := range []struct{ name, path string }{
		{"fetch (native, fresh realm)", "/fetch"},
		{"fetch (page's, absolute URL)", "/fetch-wrapped"},
		{"navigator.sendBeacon", "/beacon"},
		{"navigator.sendBeacon (fresh realm)", "/beacon-native"},
		{"WebSocket", "/ws"},
		{"EventSource", "/events"},
		{"XMLHttpRequest (fresh realm)", "/xhr"},
		{"<img> in written markup", "/img-markup"},
		{"Image (fresh realm)", "/img-native"},
		{"CSS url()", "/css-bg"},
		{"CSS @import", "/import.css"},
		{"@font-face", "/font.woff"},
		{"<link rel=prefetch>", "/prefetch"},
		{"<link rel=stylesheet> written by a script", "/sheet.css"},
		{"Link: preload header", "/preload.css"},
	} {
		check("exfiltrate with "+x.name, !reached(x.path), "")
	}
	// Service workers.
	check("navigator.serviceWorker.register", is("sw", "refused"), rep["sw"])
	check("serviceWorker.register (fresh realm)", is("sw-native", "refused"), rep["sw-native"])
	check("serviceWorker.register of an archived script", is("sw-archived", "refused"), rep["sw-archived"])
	check("a service worker is registered", is("sw-count", "0"), rep["sw-count"])
	// The banner.
	banner := doms["attacks.html"]
	check("rewrite the banner through the DOM", is("banner-dom", "blocked") && strings.Contains(banner, `<div id="herod-banner"`) &&
		!strings.Contains(banner, "FORGED"), rep["banner-dom"])
	forged := doms["forge.html"]
	check("forge the banner by postMessage", !strings.Contains(forged, "bank.example") &&
		strings.Contains(forged, `<span id="herod-url">`+hostURL+`forge.html</span>`) && !strings.Contains(forged, "FORGED"),
		between(forged, `<div id="herod-banner"`, "</div>"))
	check("hide the banner with the page's CSS", strings.Contains(forged, `<div id="herod-banner" role="banner">`), "")
	// The top window.
	for _, x := range [][2]string{{"/top", "top-href"}, {"/top-replace", "top-replace"}, {"/top-link", "top-link"}, {"/popup", "popup"}} {
		check("navigate the top window to the live web ("+x[1]+")", !reached(x[0]) && strings.Contains(doms["nav.html"], `id="herod-frame"`), rep[x[1]])
	}
	// <meta http-equiv> and header tricks.
	check("<meta http-equiv=Content-Security-Policy> loosening the policy", is("meta-csp", "blocked") && !reached("/after-meta-csp"), rep["meta-csp"])
	check("<meta http-equiv=refresh> to the live web", !reached("/refresh"), "")
	check("Refresh header to the live web", !reached("/header-refresh"), "")

	// The page's own frame: the UI page's frame-src governs every
	// navigation of the frame, the page's own included.
	check("navigate its own frame to the live web (location.href)", !reached("/selfnav"), "")
	check("navigate its own frame by a script-written <meta refresh>", !reached("/meta-refresh-script"), "")

	unexpected := livePaths
	if len(unexpected) != 0 {
		t.Errorf("requests reached the live host: %q", unexpected)
	}
	if n := len(siteHits.seen()); n != archivedHits {
		t.Errorf("%d requests reached the hostile site after it was archived", n-archivedHits)
	}
	blocked := 0
	for _, a := range attacks {
		if a.blocked {
			blocked++
		}
	}
	t.Logf("attacks: %d tried, %d blocked; requests reaching the live host: %d", len(attacks), blocked, len(unexpected))
	if testing.Verbose() {
		for _, a := range attacks {
			t.Logf("  blocked=%v  %s  %.80s", a.blocked, a.name, a.detail)
		}
	}
}

// TestFramedNavigation checks that the framed page follows its frame: a
// page that navigates to another capture, and one that calls pushState
// within its site, leave the banner, title and address naming where the
// frame is (asked of /api/banner when it changed).
func TestFramedNavigation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	browser := browsertest.Find(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	liveSrv := httptest.NewServer(&counter{})
	t.Cleanup(liveSrv.Close)
	site, _ := hostileSite(t, liveSrv.URL)
	m := archiveHostile(ctx, t, site)
	ui, _, _, log := serveGateway(t, gateway.Config{Archive: m})
	const ts = "20240102"
	dom, console := browser.Load(t, ui+"/web/"+ts+"/"+site.URL+"/moves.html")
	for _, want := range []string{
		`<span id="herod-url">` + site.URL + `/secret.html</span>`,
		`<span id="herod-date">2024-01-01 06:00:00</span>`,
		`<title>` + site.URL + `/secret.html · 2024-01-01 06:00:00 · herod</title>`,
		`<a id="herod-dates" href="/web/*/` + site.URL + `/secret.html">1 capture</a>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("after the frame moved on, the UI lacks %s\n%s\nconsole: %q", want, between(dom, "<body>", "<iframe"), console)
		}
	}
	dom, console = browser.Load(t, ui+"/web/"+ts+"/"+site.URL+"/push.html")
	for _, want := range []string{
		`<span id="herod-url">` + site.URL + `/pushed.html?tab=2</span>`,
		`<span id="herod-date">(not archived)</span>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("after pushState, the UI lacks %s\n%s\nconsole: %q", want, between(dom, "<body>", "<iframe"), console)
		}
	}
	banners := 0
	for _, r := range log.all() {
		if r.Origin == "ui" && strings.HasPrefix(r.URI, "/api/banner?") {
			banners++
		}
	}
	if banners != 2 {
		t.Errorf("%d /api/banner requests, want 2 (one per move)", banners)
	}
}

// between returns the text of s between the first from and the next to.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}
