package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// swConfigOf returns the HEROD object of a service worker script.
func swConfigOf(t *testing.T, js string) swConfig {
	t.Helper()
	line, rest, _ := strings.Cut(js, "\n")
	var cfg swConfig
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(line, "var HEROD = "), ";")), &cfg); err != nil {
		t.Fatalf("first line %.200q: %v", line, err)
	}
	if !strings.Contains(rest, `addEventListener("fetch"`) {
		t.Errorf("the script lacks the worker's code")
	}
	return cfg
}

func TestServiceWorkerScript(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := getUI(t, s, swPath)
	if w.Code != http.StatusOK {
		t.Fatalf("%s: %d", swPath, w.Code)
	}
	if ct, cc := w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"); !strings.HasPrefix(ct, "text/javascript") || cc != "no-cache" {
		t.Errorf("Content-Type %q, Cache-Control %q; want JavaScript, no-cache", ct, cc)
	}
	cfg := swConfigOf(t, w.Body.String())
	if cfg.Content != contentOrigin || cfg.Frameless {
		t.Errorf("content %q, frameless %v", cfg.Content, cfg.Frameless)
	}
	// The shell's response carries the framed page's security headers.
	for k, want := range map[string]string{
		"Content-Security-Policy": uiCSP(contentOrigin),
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
		"Content-Type":            "text/html; charset=utf-8",
	} {
		if got := cfg.Headers[k]; got != want {
			t.Errorf("shell header %s = %q, want %q", k, got, want)
		}
	}
	for _, want := range []string{
		`<iframe id="herod-frame" title="archived page" src="` + shellSrc + `" sandbox="` + frameSandbox + `"`,
		`data-content-origin="` + contentOrigin + `" data-url="` + shellURL + `" data-ts="` + shellTS + `" data-banner="pending"`,
		`<span id="herod-url">` + shellURL + `</span>`,
		`<a id="herod-dates" href="/web/*/` + shellURL + `">all dates</a>`,
		"<script>" + string(uiJS) + "</script>",
	} {
		if !strings.Contains(cfg.Shell, want) {
			t.Errorf("shell lacks %s\n%s", want, cfg.Shell)
		}
	}
	// ui.js is inline: nothing in it may end the script element early.
	if strings.Contains(strings.ToLower(string(uiJS)), "</script") {
		t.Error(`ui.js holds "</script", which would end its inline script element`)
	}
	// The server's framed page is the same page with the banner filled in.
	page := getUI(t, s, "/web/2021/"+page).Body.String()
	if strings.Contains(page, `data-banner="pending"></iframe>`) || !strings.Contains(page, `>3 captures</a>`) {
		t.Errorf("the gateway's framed page is not complete:\n%s", page)
	}

	// Archived pages run on the content origin, which has no worker.
	if w := getContent(t, s, swPath); w.Code == http.StatusOK || strings.Contains(w.Body.String(), "HEROD") {
		t.Errorf("content origin %s: %d %.100q", swPath, w.Code, w.Body)
	}

	// A frameless gateway's worker steps aside.
	fl := newServer(t, sampleArchive(t), func(c *Config) { c.Frameless = true })
	if cfg := swConfigOf(t, getUI(t, fl, swPath).Body.String()); !cfg.Frameless || cfg.Shell != "" {
		t.Errorf("frameless worker: frameless %v, shell %q", cfg.Frameless, cfg.Shell)
	}
}

// TestUIPagesPrepareReplay checks that the UI's pages preconnect to the
// content origin and (framed) load ui.js, which registers the worker, and
// that pages shown on the content origin do neither.
func TestUIPagesPrepareReplay(t *testing.T) {
	script := `<script src="` + uiJSPath + `?v=` + uiJSHash + `" defer></script></head>`
	preconnect := `<link rel="preconnect" href="` + contentOrigin + `">`
	for _, frameless := range []bool{false, true} {
		s := newServer(t, sampleArchive(t), func(c *Config) { c.Frameless = frameless })
		for _, p := range []string{"/", "/web/*/" + page, "/web/*/http://example.com/nothing"} {
			w := getUI(t, s, p)
			body := w.Body.String()
			if !strings.Contains(body, preconnect) || w.Header().Get("Link") != "<"+contentOrigin+">; rel=preconnect" {
				t.Errorf("frameless %v %s: no preconnect to the content origin (Link %q)", frameless, p, w.Header().Get("Link"))
			}
			if strings.Contains(body, script) == frameless {
				t.Errorf("frameless %v %s: ui.js loaded %v", frameless, p, !frameless)
			}
		}
	}
	s := newServer(t, sampleArchive(t))
	w := getContent(t, s, "/web/2021/http://example.com/nothing")
	if body := w.Body.String(); w.Code != http.StatusNotFound || strings.Contains(body, uiJSPath) || strings.Contains(body, "preconnect") ||
		w.Header().Get("Link") != "" {
		t.Errorf("content origin's error page: %d, Link %q\n%s", w.Code, w.Header().Get("Link"), body)
	}
}
