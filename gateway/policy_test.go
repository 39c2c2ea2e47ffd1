package gateway

import (
	"context"
	"errors"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

func TestParseOrigin(t *testing.T) {
	for _, tc := range []struct {
		in, fixed, port string
		bad             bool
	}{
		{in: "http://gw.example:5001", fixed: "http://gw.example:5001"},
		{in: "HTTPS://GW.example/", fixed: "https://gw.example"},
		{in: "http://gw.example:80", fixed: "http://gw.example"},
		{in: "http://[::1]:5002", fixed: "http://[::1]:5002"},
		{in: ":5002", port: "5002"},
		{in: "", bad: true},
		{in: ":0", bad: true},
		{in: ":70000", bad: true},
		{in: "ftp://gw.example", bad: true},
		{in: "http://gw.example/path", bad: true},
		{in: "http://user@gw.example", bad: true},
		{in: "gw.example:5001", bad: true},
	} {
		o, err := parseOrigin(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrOrigin) {
				t.Errorf("parseOrigin(%q) = %+v, %v; want ErrOrigin", tc.in, o, err)
			}
			continue
		}
		if err != nil || o.fixed != tc.fixed || o.port != tc.port {
			t.Errorf("parseOrigin(%q) = %+v, %v; want fixed %q port %q", tc.in, o, err, tc.fixed, tc.port)
		}
	}
	if _, err := New(Config{Archive: newFake(), UIOrigin: ":5001", ContentOrigin: ":5001"}); !errors.Is(err, ErrOrigin) {
		t.Errorf("New with one origin for both: %v", err)
	}
	if _, err := New(Config{Archive: newFake(), UIOrigin: ":5001"}); !errors.Is(err, ErrOrigin) {
		t.Errorf("New without a content origin: %v", err)
	}
}

// TestContentPolicy checks the headers of content origin replies: the
// CSP, archived headers renamed, executables as downloads, no service
// worker scripts, and sandboxed documents that are not rewritten HTML.
func TestContentPolicy(t *testing.T) {
	f := sampleArchive(t)
	f.add(t, "http://example.com/hostile", "20210101000000", 200, "text/html", "<p>hi</p>",
		"Set-Cookie", "a=1", "Content-Security-Policy", "default-src *", "Strict-Transport-Security", "max-age=1",
		"Clear-Site-Data", `"*"`, "Refresh", "0; url=http://live.example/", "Link", "<http://live.example/x.css>; rel=preload",
		"Service-Worker-Allowed", "/", "Access-Control-Allow-Origin", "*", "X-Frame-Options", "DENY")
	f.add(t, "http://example.com/setup.exe", "20210101000000", 200, "application/x-msdownload", "MZ")
	f.add(t, "http://example.com/tool", "20210101000000", 200, "application/octet-stream", "\x7fELF")
	f.add(t, "http://example.com/a.svg", "20210101000000", 200, "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	s := newServer(t, f)
	csp := contentCSP(uiOrigin)
	for _, want := range []string{"default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:", "object-src 'none'",
		"base-uri 'self'", "form-action 'self'", "frame-ancestors 'self' " + uiOrigin} {
		if !strings.Contains(csp, want) {
			t.Errorf("content CSP %q lacks %q", csp, want)
		}
	}
	w := get(t, s, "/web/2021/http://example.com/hostile")
	h := w.Header()
	// Framed, the document sandboxes itself as the frame's attribute does.
	if want := csp + "; sandbox " + frameSandbox; h.Get("Content-Security-Policy") != want {
		t.Errorf("CSP = %q, want %q", h.Get("Content-Security-Policy"), want)
	}
	for _, k := range []string{"Set-Cookie", "Strict-Transport-Security", "Clear-Site-Data", "Refresh", "Service-Worker-Allowed",
		"Access-Control-Allow-Origin", "X-Frame-Options"} {
		if len(h.Values(k)) != 0 || h.Get("X-Archive-Orig-"+k) == "" {
			t.Errorf("archived %s: %q, renamed %q", k, h.Values(k), h.Get("X-Archive-Orig-"+k))
		}
	}
	if h.Get("X-Archive-Orig-Content-Security-Policy") != "default-src *" || strings.Contains(h.Get("Link"), "preload") {
		t.Errorf("archived CSP or Link acts: %v", h)
	}
	for _, target := range []string{"/web/2021/http://example.com/setup.exe", "/web/2021id_/http://example.com/setup.exe", "/web/2021/http://example.com/tool"} {
		h := get(t, s, target).Header()
		if !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %v, want a nosniff attachment", target, h)
		}
	}
	if cd := get(t, s, "/web/2021/http://example.com/setup.exe").Header().Get("Content-Disposition"); cd != `attachment; filename=setup.exe` {
		t.Errorf("Content-Disposition = %q", cd)
	}
	// Documents that do not run the replay script run no script at all,
	// but the gateway's error page, which runs its own (by its hash) in
	// an opaque origin.
	for _, target := range []string{"/web/2021/http://example.com/a.svg", "/web/2021id_/" + page} {
		if got := get(t, s, target).Header().Get("Content-Security-Policy"); !strings.Contains(got, "sandbox") || strings.Contains(got, "allow-scripts") {
			t.Errorf("%s: CSP %q, want a sandbox without scripts", target, got)
		}
	}
	got := get(t, s, "/web/2021/http://nowhere.example/").Header().Get("Content-Security-Policy")
	if !strings.Contains(got, "; script-src "+errorFrameJSSource+";") || !strings.Contains(got, "; sandbox ") ||
		strings.Contains(got, "allow-same-origin") {
		t.Errorf("error page: CSP %q, want its script alone, in a sandbox of an opaque origin", got)
	}
	if got := get(t, s, "/web/2021/"+page).Header().Get("Content-Security-Policy"); !strings.HasSuffix(got, "; sandbox "+frameSandbox) {
		t.Errorf("rewritten HTML: CSP %q, want the frame's sandbox", got)
	}
	fl := newServer(t, f, func(c *Config) { c.Frameless = true })
	if got := get(t, fl, "/web/2021/"+page).Header().Get("Content-Security-Policy"); strings.Contains(got, "sandbox") {
		t.Errorf("frameless rewritten HTML sandboxed (it is the top document): %q", got)
	}
	// Service workers: refused whatever the path.
	for _, p := range []string{"/sw.js", "/web/2021id_/http://example.com/sw.js", replayJSPath} {
		if w := getContent(t, s, p, "Service-Worker", "script"); w.Code != http.StatusForbidden {
			t.Errorf("service worker script %s: %d, want 403", p, w.Code)
		}
	}
}

// TestOriginRouting checks what each origin does with the other's paths.
func TestOriginRouting(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	for _, tc := range []struct {
		origin, target, hdr string
		code                int
		loc                 string
	}{
		// Archived bytes only from the content origin.
		{uiOrigin, "/web/2021id_/" + page, "", http.StatusFound, contentOrigin + "/web/2021id_/" + page},
		{uiOrigin, "/web/2021if_/" + page, "", http.StatusFound, contentOrigin + "/web/2021if_/" + page},
		{uiOrigin, replayJSPath, "", http.StatusMovedPermanently, contentOrigin + replayJSPath},
		// The UI's pages only from the UI origin.
		{contentOrigin, "/", "", http.StatusFound, uiOrigin + "/"},
		{contentOrigin, "/web/*/" + page, "", http.StatusFound, uiOrigin + "/web/*/" + page},
		{contentOrigin, "/api/status", "", http.StatusFound, uiOrigin + "/api/status"},
		{contentOrigin, "/cdx?url=example.com", "", http.StatusFound, uiOrigin + "/cdx?url=example.com"},
		// A replay opened on its own shows framed.
		{contentOrigin, "/web/2021/" + page, "document", http.StatusFound, uiOrigin + "/web/2021/" + page},
		{contentOrigin, "/web/2021if_/" + page, "document", http.StatusFound, uiOrigin + "/web/2021/" + page},
		{contentOrigin, "/web/2021/" + page, "iframe", http.StatusOK, ""},
		{contentOrigin, "/web/2021id_/" + page, "document", http.StatusOK, ""},
	} {
		var hdr []string
		if tc.hdr != "" {
			hdr = []string{"Sec-Fetch-Dest", tc.hdr}
		}
		w := getAt(t, s, tc.origin, tc.target, hdr...)
		if w.Code != tc.code || w.Header().Get("Location") != tc.loc {
			t.Errorf("%s%s (%s): %d %q, want %d %q", tc.origin, tc.target, tc.hdr, w.Code, w.Header().Get("Location"), tc.code, tc.loc)
		}
	}
	// The UI's pages are never framed, and frame only the content origin.
	h := getUI(t, s, "/web/2021/"+page).Header()
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "frame-src "+contentOrigin) ||
		h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("UI headers: %v", h)
	}
}

// TestBannerJSON checks the banner the framed page's script asks for.
func TestBannerJSON(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := getUI(t, s, "/api/banner?url="+page+"&ts=2021")
	for _, want := range []string{`"url": "http://example.com/"`, `"ts": "20210615000000"`, `"date": "2021-06-15 00:00:00"`,
		`"count": 3`, `"prevTs": "20200101120000"`, `"nextTs": "20220301080000"`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("banner JSON lacks %s: %s", want, w.Body)
		}
	}
	for target, code := range map[string]int{
		"/api/banner?url=http://nowhere.example/&ts=2021": http.StatusNotFound,
		"/api/banner?url=ftp://x/&ts=2021":                http.StatusBadRequest,
		"/api/banner?url=" + page + "&ts=20x":             http.StatusBadRequest,
	} {
		if w := getUI(t, s, target); w.Code != code {
			t.Errorf("%s: %d, want %d", target, w.Code, code)
		}
	}
}

// TestBannerProvenance: the banner, framed and in its JSON, names who
// fetched the capture and who witnessed it, when; without witnesses it
// says so.
func TestBannerProvenance(t *testing.T) {
	fetcher, witness := "12D3KooWFetcherAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1f3c", "12D3KooWWitnessBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB9e0d"
	a := sampleArchive(t)
	a.setPeers(t, func(string, int) string { return fetcher })
	seen := time.Date(2021, 6, 15, 0, 0, 3, 0, time.UTC)
	var dating string
	s := newServer(t, a, func(c *Config) {
		c.Provenance = func(_ context.Context, v archive.Version) Provenance {
			if dating == "witnessed" {
				return Provenance{Dating: dating, Witnesses: []archive.Witness{{Peer: witness, Seen: seen}}}
			}
			return Provenance{Dating: dating}
		}
	})
	dating = "witnessed"
	want := "fetched by 12D3Ko…1f3c · witnessed by 12D3Ko…9e0d at 00:00:03 UTC" // the capture's day
	if w := getUI(t, s, "/api/banner?url="+page+"&ts=2021"); !strings.Contains(w.Body.String(), `"provenance": "`+want+`"`) {
		t.Errorf("banner JSON: %s\nwant provenance %q", w.Body, want)
	}
	if w := getUI(t, s, "/web/2021/"+page); !strings.Contains(w.Body.String(), `<span id="herod-prov" class="prov">`+html.EscapeString(want)+`</span>`) {
		t.Errorf("framed banner lacks the provenance %q", want)
	}
	dating = "fetched"
	if w := getUI(t, s, "/api/banner?url="+page+"&ts=2021"); !strings.Contains(w.Body.String(), "fetched by this node (12D3Ko…1f3c) · not witnessed\"") {
		t.Errorf("banner JSON of this node's own old fetch: %s", w.Body)
	}
	dating = "pending"
	if w := getUI(t, s, "/api/banner?url="+page+"&ts=2021"); !strings.Contains(w.Body.String(), "fetched by 12D3Ko…1f3c · not witnessed yet") {
		t.Errorf("banner JSON of a pending capture: %s", w.Body)
	}
}
