package gatewaytest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/gateway"
)

// pagePart is a variant of the framed replay page: the gateway's page
// with one part taken out, to measure what that part costs.
type pagePart struct {
	name string
	// unscoped: served at /unscoped/web/<ts>/<url>, outside the service
	// worker's scope (/web/), which the browser then never starts.
	unscoped bool
	// edit rewrites the page (nil: as the gateway wrote it) and its
	// headers; the script's CSP hash follows the script.
	edit func(page string, h http.Header) string
}

var (
	scriptRE  = regexp.MustCompile(`(?s)<script>(.*?)</script>\n?`)
	sandboxRE = regexp.MustCompile(` sandbox="[^"]*"`)
	bannerRE  = regexp.MustCompile(`(?s)<div id="herod-banner".*?</form>\n</div>\n`)
	styleRE   = regexp.MustCompile(`(?s)<style>.*?</style>\n`)
	frameRE   = regexp.MustCompile(`(?s)<iframe id="herod-frame".*?</iframe>\n`)
	hashRE    = regexp.MustCompile(`'sha256-[^']*'`)
	// registerRE is ui.js's registration of the service worker, after
	// the load event.
	registerRE = regexp.MustCompile(`(?s)if \(navigator\.serviceWorker && window\.isSecureContext\) \{.*?\n  \}\n`)
)

// editScript rewrites the page's inline script with f and its CSP hash
// with it.
func editScript(page string, h http.Header, f func(string) string) string {
	m := scriptRE.FindStringSubmatch(page)
	if m == nil {
		return page
	}
	js := f(m[1])
	sum := sha256.Sum256([]byte(js))
	h.Set("Content-Security-Policy", hashRE.ReplaceAllString(h.Get("Content-Security-Policy"),
		"'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'"))
	return strings.Replace(page, m[0], "<script>"+js+"</script>\n", 1)
}

var pageParts = []pagePart{
	{name: "as served"},
	{name: "no script", edit: func(p string, h http.Header) string { return scriptRE.ReplaceAllString(p, "") }},
	{name: "no worker registration", edit: func(p string, h http.Header) string {
		return editScript(p, h, func(js string) string { return registerRE.ReplaceAllString(js, "") })
	}},
	{name: "registration at once", edit: func(p string, h http.Header) string {
		// as ui.js did before 2026-11: while the page loads
		return editScript(p, h, func(js string) string {
			return registerRE.ReplaceAllString(js, "if (navigator.serviceWorker && window.isSecureContext) {\n    register();\n  }\n")
		})
	}},
	{name: "outside worker scope", unscoped: true},
	{name: "no sandbox", edit: func(p string, h http.Header) string { return sandboxRE.ReplaceAllString(p, "") }},
	{name: "no banner", edit: func(p string, h http.Header) string { return bannerRE.ReplaceAllString(p, "") }},
	{name: "no style", edit: func(p string, h http.Header) string {
		return strings.Replace(styleRE.ReplaceAllString(p, ""), `<iframe `, `<iframe style="border:0;width:100%;height:90vh;display:block" `, 1)
	}},
	{name: "no UI headers", edit: func(p string, h http.Header) string {
		for _, k := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy"} {
			h.Del(k)
		}
		return p
	}},
	{name: "frame before banner", edit: func(p string, h http.Header) string {
		f := frameRE.FindString(p)
		p = strings.Replace(p, f, "", 1)
		return strings.Replace(p, `<div id="herod-banner"`, f+`<div id="herod-banner" style="order:-1"`, 1)
	}},
}

// partsHandler serves ui as it is, but a framed replay page edited as
// the part it holds says.
func partsHandler(ui http.Handler, part *atomic.Pointer[pagePart]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := part.Load()
		if rest, ok := strings.CutPrefix(r.URL.Path, "/unscoped/web/"); ok {
			r = r.Clone(r.Context())
			r.URL.Path, r.URL.RawPath, r.RequestURI = "/web/"+rest, "", ""
		}
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/web/")
		if p == nil || p.edit == nil || !ok {
			ui.ServeHTTP(w, r)
			return
		}
		if t, err := gateway.ParseWebPath(rest, r.URL.RawQuery); err != nil || t.Kind != gateway.KindReplay || t.Mod != "" {
			ui.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		ui.ServeHTTP(rec, r)
		res := rec.Result()
		var body bytes.Buffer
		body.ReadFrom(res.Body)
		h := res.Header.Clone()
		page := p.edit(body.String(), h)
		h.Del("Content-Length")
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		w.Write([]byte(page))
	})
}

// TestFramingParts measures which part of the framed replay page costs
// the time a framed replay takes beyond the bare frame (issue 18): the
// page as the gateway writes it, and with one part taken out at a time
// (its script, the worker's registration, the frame's sandbox, the
// banner, the style, the UI origin's headers) or moved (the frame before
// the banner), each against the same replay in a bare frame (bareFrames), in headless
// Chromium through links of HEROD_RTT_MS (default 0,20,80) ms, typed
// arrivals in fresh and shared browser contexts, the service worker
// bypassed (it would write its own page), HEROD_VIEWS views (default 9)
// each way in rotation (HEROD_PARTS, a comma-separated list of their
// names, keeps only those). It prints each way's median over the bare frame
// and the median paired difference, and runs when HEROD_REPLAY_LATENCY
// is set.
func TestFramingParts(t *testing.T) {
	if os.Getenv("HEROD_REPLAY_LATENCY") == "" {
		t.Skip("the framing parts benchmark runs when HEROD_REPLAY_LATENCY is set")
	}
	rtts, views := latencyEnv(t)
	var only []string
	if s := os.Getenv("HEROD_PARTS"); s != "" {
		only = strings.Split(s, ",")
	}
	br := newChrome(t)
	m, pages := benchPages(t)
	const ts = "20240102"
	for _, rtt := range rtts {
		delay := time.Duration(rtt) * time.Millisecond / 2
		single := delayedSingleOrigin(t, m, delay)
		var part atomic.Pointer[pagePart]
		framed, _ := delayedGatewayWrap(t, m, delay, func(ui http.Handler) http.Handler { return partsHandler(ui, &part) })
		bare := framed + "/bare"
		for _, a := range arrivals[:2] {
			a.noWorker = true
			type way struct {
				name string
				view func(p string) time.Duration
			}
			ways := []way{
				{"single-origin", func(p string) time.Duration { return br.loadTime(t, single, ts, p, a) }},
				{"bare frame", func(p string) time.Duration { return br.loadTime(t, bare, ts, p, a) }},
			}
			for i := range pageParts {
				pp := &pageParts[i]
				if only != nil && !slices.Contains(only, pp.name) {
					continue
				}
				ways = append(ways, way{pp.name, func(p string) time.Duration {
					part.Store(pp)
					defer part.Store(nil)
					if pp.unscoped {
						return br.loadTime(t, framed+"/unscoped", ts, p, a)
					}
					return br.loadTime(t, framed, ts, p, a)
				}})
			}
			times := make([][]time.Duration, len(ways))
			if !a.cold {
				for _, w := range ways {
					w.view(pages[0])
				}
			}
			for i := range views {
				p := pages[(i*7+1)%len(pages)]
				for k := range ways {
					w := (i + k) % len(ways)
					times[w] = append(times[w], ways[w].view(p))
				}
			}
			diff := func(w, base int) time.Duration {
				d := make([]time.Duration, views)
				for i := range d {
					d[i] = times[w][i] - times[base][i]
				}
				return median(d)
			}
			// Medians, and the fastest views (the least disturbed).
			mb, mz := median(times[0]), median(times[1])
			fb, fz := slices.Min(times[0]), slices.Min(times[1])
			var b strings.Builder
			fmt.Fprintf(&b, "parts: rtt %d ms %s views %d: single-origin median %.1f fastest %.1f ms, bare frame median %.1f (%.3f) fastest %.1f ms (%.3f)",
				rtt, a.name, views, ms(mb), ms(fb), ms(mz), ms(mz)/ms(mb), ms(fz), ms(fz)/ms(fb))
			for w := 2; w < len(ways); w++ {
				mw, fw := median(times[w]), slices.Min(times[w])
				fmt.Fprintf(&b, "\n  %-22s median %6.1f ms: over bare %.3f, paired %+6.1f ms, over single %.3f; fastest %6.1f ms: over bare %.3f, over single %.3f",
					ways[w].name, ms(mw), ms(mw)/ms(mz), ms(diff(w, 1)), ms(mw)/ms(mb), ms(fw), ms(fw)/ms(fz), ms(fw)/ms(fb))
			}
			t.Log(b.String())
			fmt.Println(b.String())
		}
	}
}
