package gateway

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// Framed replay: /web/<ts>/<url> on the UI origin is a page of the UI
// holding the banner and an iframe whose document comes from the content
// origin. The archived page cannot reach the banner (another origin); the
// replay script in the frame tells the UI, by postMessage, where the frame
// is, and ui.js keeps the banner, title and address bar in step.

// uiJS is the script of the framed replay page (see ui.js).
//
//go:embed ui.js
var uiJS []byte

// uiJSPath is where the UI origin serves uiJS.
const uiJSPath = "/static/ui.js"

// uiJSHash and uiJSTag version uiJS as replayJSHash and replayJSTag do
// replayJS; uiJSSource is the CSP source that allows uiJS inline.
var (
	uiJSSum    = sha256.Sum256(uiJS)
	uiJSHash   = fmt.Sprintf("%x", uiJSSum)[:16]
	uiJSTag    = `"` + uiJSHash + `"`
	uiJSSource = "'sha256-" + base64.StdEncoding.EncodeToString(uiJSSum[:]) + "'"
)

// bannerPath answers the framed page's script with the banner of a
// capture, as JSON.
const bannerPath = "/api/banner"

// frameSandbox is the sandbox of the content frame: its scripts, forms,
// modals and downloads work, and it keeps its own origin; it can neither
// open a window nor navigate the top window, even when the reader clicks
// (with a click, a page could otherwise take the tab to the live web, or
// open another capture in a window it can script, under that capture's
// banner). Links, forms and window.open that leave the frame for a new
// window or the top ask ui.js instead (herod:open), which opens the
// archive's framed page itself, with no opener.
const frameSandbox = "allow-scripts allow-same-origin allow-forms allow-modals allow-downloads"

// shownByBrowser reports whether captures of media type mt are documents
// the browser shows with a viewer of its own that a sandboxed frame keeps
// out: PDF, in Chromium's viewer. Such a capture is framed without the
// sandbox attribute, as its archived bytes (id_), which the content
// origin always sends under a sandbox CSP that runs no script (docs/replay.md,
// "Documents the browser shows itself").
func shownByBrowser(mt string) bool {
	return mt == "application/pdf"
}

// frameHead is the start of the framed replay page up to its title; the
// style and script follow the title (framePage).
const frameHead = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>`

// frameStyle is the framed page's style sheet.
const frameStyle = `<style>
html,body{height:100%;margin:0}body{display:flex;flex-direction:column;font:13px/1.6 system-ui,sans-serif}
#herod-banner{flex:none;background:#1d3557;color:#fff;padding:4px 12px;display:flex;flex-wrap:wrap;gap:4px 12px;align-items:baseline}
#herod-banner a{color:#fff}#herod-banner .home{font-weight:700;text-decoration:none}#herod-url{color:#cfd8e3;word-break:break-all}#herod-prov{color:#cfd8e3;font-size:.9em}#herod-prov:empty{display:none}
#herod-banner form{margin-left:auto;display:flex;gap:4px;min-width:0}#herod-banner input{font:inherit;padding:0 4px;border:0;border-radius:3px;min-width:0;flex:1 1 auto}
#herod-banner input[name=url]{flex-grow:3}#herod-banner button{flex:none}
@media (max-width:640px){#herod-banner form{flex:1 1 100%;margin-left:0}#herod-banner input[name=date]{width:calc(14ch + 12px);flex:none}}
#herod-frame{flex:1;border:0;width:100%;background:#fff}[hidden]{display:none!important}
</style>
`

// framePage returns the framed replay page: the banner of capture d, the
// form, and the frame of src (the content origin's replay of d.URL at ts,
// the timestamp as the reader wrote it). A pending page (the service
// worker's shell, sw.go) shows the URL alone and marks the frame
// data-banner="pending": ui.js asks /api/banner for the rest. ui.js is
// inline, after the frame (allowed by its hash, uiCSP), so that the page
// needs no second resource before its load event; it holds no "</script"
// (TestServiceWorkerScript). The page is written by hand rather than by
// html/template, which cost as much as the rest of the request: every
// value is a canonical http(s) URL, a timestamp or a date, each escaped
// with html.EscapeString (a canonical URL cannot start a javascript: or
// data: URL).
func framePage(d bannerData, src, content, ts string, pending bool) []byte {
	return framePageOf(d, src, content, ts, pending, true)
}

// framePageOf is framePage; sandboxed false leaves out the frame's sandbox
// attribute, for a document the browser shows itself (shownByBrowser),
// which src must then name as archived bytes (id_).
func framePageOf(d bannerData, src, content, ts string, pending, sandboxed bool) []byte {
	e := html.EscapeString
	u := e(d.URL)
	// One buffer, appended to piece by piece: no string is built to be
	// copied again (a quarter of the page's time went to that).
	b := make([]byte, 0, len(frameHead)+len(frameStyle)+len(uiJS)+2048+8*len(u)+2*len(src))
	w := func(ss ...string) {
		for _, s := range ss {
			b = append(b, s...)
		}
	}
	w(frameHead, u, " · ", e(d.Date), " · herod</title>\n", frameStyle)
	w(`</head><body>
<div id="herod-banner" role="banner">
<a class="home" href="/">herod</a>
<span>captured <span id="herod-date">`, e(d.Date), `</span> UTC</span>
<span id="herod-url">`, u, "</span>\n", `<span id="herod-prov" class="prov">`, e(d.Provenance), "</span>\n")
	neighbour := func(id, ts, label string, prev bool) {
		w(`<a id="`, id, `" href="/web/`, e(ts), `/`, u, `"`)
		if ts == "" {
			w(` hidden`)
		}
		if prev {
			w(`>&#9664; <span>`, e(label), "</span></a>\n")
		} else {
			w(`><span>`, e(label), "</span> &#9654;</a>\n")
		}
	}
	neighbour("herod-prev", d.PrevTS, d.PrevLabel, true)
	neighbour("herod-next", d.NextTS, d.NextLabel, false)
	captures := strconv.Itoa(d.Count) + " captures"
	switch {
	case pending:
		captures = "all dates"
	case d.Count == 1:
		captures = "1 capture"
	}
	w(`<a id="herod-dates" href="/web/*/`, u, `">`, captures, `</a>
<form method="get" action="/"><input name="url" value="`, u, `" aria-label="URL" size="30"><input name="date" value="`, e(ts),
		`" aria-label="date" size="14" pattern="[0-9]{1,17}|[0-9]{4}-[0-9]{2}(-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2})?)?)?" title="year first: 2026-11-28, 2026-11-28 10:15, or a timestamp such as 20261128101503"><button type="submit">Go</button></form>
<form method="get" action="/search" role="search"><label>search <input type="search" name="q" aria-label="search the archive's text as of this date" title="words, &quot;a phrase&quot;, site:example.com; the pages as they were on this date" size="12"></label><input type="hidden" name="at" value="`, e(ts), `"></form>
</div>
<iframe id="herod-frame" title="archived page" src="`, e(src), `"`)
	if sandboxed {
		w(` sandbox="`, frameSandbox, `"`)
	}
	w(` allow="fullscreen"
 data-content-origin="`, e(content), `" data-url="`, u, `" data-ts="`, e(ts), `"`, pendingAttr[pending], `></iframe>
<script>`)
	b = append(b, uiJS...)
	w("</script>\n</body></html>\n")
	return b
}

// pendingAttr marks the frame of a page whose banner ui.js fills in.
var pendingAttr = map[bool]string{true: ` data-banner="pending"`}

// serveFrame answers /web/<ts>/<url> on the UI origin with the framed
// replay page: the banner of the capture t selects and a frame replaying
// it from the content origin.
func (s *Server) serveFrame(w http.ResponseWriter, r *http.Request, t Target) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.cfg.Archive.Versions(ctx, t.URL)
	if err != nil {
		s.archiveError(w, r, t.URL, err)
		return
	}
	doc := t.URL
	if len(vs) == 0 {
		if doc, vs = s.fuzzyFor(ctx, t.URL, t.Time); doc == "" {
			s.notArchived(w, r, t.URL)
			return
		}
		w.Header().Set(FuzzyHeader, doc)
	}
	s.stats.frames.Add(1)
	content := s.contentOrigin(r)
	i := selectVersion(vs, t.Time)
	d := bannerOf(t.URL, doc, vs, i)
	d.Provenance = s.provenanceLine(ctx, vs[i])
	var page []byte
	if shownByBrowser(mediaType(vs[i].ContentType)) {
		// Chromium's PDF viewer stays out of a sandboxed frame: the frame
		// has none, and holds the archived bytes, which the content
		// origin sends sandboxed by their CSP (no script runs).
		page = framePageOf(d, content+webPath(t.TS, ModRaw, t.URL), content, t.TS, false, false)
	} else {
		page = framePage(d, content+webPath(t.TS, "", t.URL), content, t.TS, false)
	}
	// The framed page stands for the memento, as the replay did before
	// framing: Memento clients following a TimeGate land here.
	s.mementoHeaders(w.Header(), s.uiOrigin(r), t.URL, vs[i].Time)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeBody(w, r, http.StatusOK, page)
}

// serveBannerJSON answers bannerPath?url=<url>&ts=<ts> with the banner of
// the capture of url that ts selects (404 when there is none).
func (s *Server) serveBannerJSON(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	u, err := canon.Canonical(strings.TrimSpace(q.Get("url")))
	if err != nil {
		http.Error(w, "gateway: banner: bad url: "+err.Error(), http.StatusBadRequest)
		return
	}
	ts := q.Get("ts")
	tm, err := ParseTimestamp(ts)
	if err != nil {
		http.Error(w, "gateway: banner: bad ts: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.cfg.Archive.Versions(ctx, u)
	if err != nil {
		s.archiveError(w, r, u, err)
		return
	}
	doc := u
	if len(vs) == 0 {
		if doc, vs = s.fuzzyFor(ctx, u, tm); doc == "" {
			s.countStatus(http.StatusNotFound)
			http.Error(w, "gateway: banner: not archived", http.StatusNotFound)
			return
		}
	}
	i := selectVersion(vs, tm)
	d := bannerOf(u, doc, vs, i)
	d.Provenance = s.provenanceLine(ctx, vs[i])
	writeJSON(w, s.log, d)
}

// reframes reports whether the content origin's replay of t, capture v,
// is the content frame's document while v is one the browser shows
// itself (shownByBrowser): a link of a replayed page to a PDF, followed
// in the sandboxed frame, where Chromium would show a blocked page.
func (s *Server) reframes(r *http.Request, t Target, v archive.Version) bool {
	return !s.cfg.Frameless && t.Mod == "" && r.Header.Get("Sec-Fetch-Dest") == "iframe" &&
		shownByBrowser(mediaType(v.ContentType))
}

// reframePage answers such a replay with a page asking the framed page
// (ui.js, herod:open "reframe") to show the capture's archived bytes in
// its frame without the sandbox attribute; its link does the same on a
// click where no script runs.
func (s *Server) reframePage(w http.ResponseWriter, r *http.Request, t Target) {
	ui := s.uiOrigin(r)
	setContentHeaders(w.Header(), ui, true)
	s.render(w, r, http.StatusOK, "reopen", errorData{Title: "Opening " + t.URL, URL: t.URL,
		Link: webPath(t.TS, "", t.URL), Reopen: ui + webPath(t.TS, "", t.URL), How: "reframe"})
}
