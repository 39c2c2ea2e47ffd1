package gateway

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
)

// maxDecoded bounds a gzip-encoded payload decoded for rewriting.
const maxDecoded = 64 << 20

// serveLatest redirects /web/<url> to the newest capture of url.
func (s *Server) serveLatest(w http.ResponseWriter, r *http.Request, url string) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.cfg.Archive.Versions(ctx, url)
	if err == nil && len(vs) == 0 {
		err = archive.ErrNotFound
	}
	if err != nil {
		s.archiveError(w, r, url, err)
		return
	}
	redirect(w, r, webPath(FormatTimestamp(vs[len(vs)-1].Time), "", url), http.StatusFound)
}

// serveReplay serves, on the content origin, the capture of t.URL
// selected by t.Time: rewritten (with the replay script, and the banner
// only in frameless mode), or byte for byte for id_; always under the
// content origin's policy.
func (s *Server) serveReplay(w http.ResponseWriter, r *http.Request, t Target) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ui := s.uiOrigin(r)
	share, served := s.shareReply(w, r, t, ui, ctx.Done())
	if served {
		return
	}
	defer share.abandon()
	if s.serveStreamed(ctx, w, r, t, ui) {
		return
	}
	factor := int64(rewriteFactor)
	if t.Mod == ModRaw {
		factor = 1
	}
	v, c, hold, err := s.get(ctx, t.URL, t.Time, factor)
	if err == nil && c == nil {
		err = archive.ErrNotFound
	}
	doc := t.URL // the URL of the capture served
	if errors.Is(err, archive.ErrNotFound) {
		if m, _ := s.fuzzyFor(ctx, t.URL, t.Time); m != "" {
			doc = m
			if v, c, hold, err = s.get(ctx, m, t.Time, factor); err == nil && c == nil {
				err = archive.ErrNotFound
			}
		}
	}
	if errors.Is(err, errBusy) {
		setContentHeaders(w.Header(), ui, true)
		s.busy(w, r, strings.TrimPrefix(err.Error(), errBusy.Error()+": "))
		return
	}
	if err != nil {
		setContentHeaders(w.Header(), ui, true)
		s.archiveError(w, r, t.URL, err)
		return
	}
	defer hold.done()
	if s.reframes(r, t, v) {
		s.reframePage(w, r, t)
		return
	}
	rw, err := NewRewriter(doc, t.TS)
	if err != nil {
		setContentHeaders(w.Header(), ui, true)
		s.errorPage(w, r, http.StatusBadRequest, err.Error(), "")
		return
	}
	rw.Worker = t.Mod == ModWorker
	s.stats.replays.Add(1)
	body := c.Body
	status := c.Status
	if status < 200 || status > 599 {
		status = http.StatusOK
	}
	h := w.Header()
	copyHeaders(h, c.Header)
	s.mementoHeaders(h, ui, t.URL, v.Time)
	if doc != t.URL {
		h.Set(FuzzyHeader, doc)
	}
	if loc := c.Header.Get("Location"); loc != "" {
		h.Set("Location", s.redirectLocation(ctx, rw, loc, t, v))
	}
	ctype := c.Header.Get("Content-Type")
	if ctype == "" {
		ctype = v.ContentType
	}
	if t.Mod == ModRaw {
		if ctype != "" {
			h.Set("Content-Type", ctype)
		}
		if gzipEncoded(c.Header, body) {
			h.Set("Content-Encoding", "gzip")
		}
		setContentHeaders(h, ui, true)
		if executable(t.URL, mediaType(ctype)) {
			setDownload(h, t.URL)
		}
		c = nil
		s.writeReply(w, r, status, body, hold, share)
		return
	}
	if gzipEncoded(c.Header, body) {
		if d, err := gunzip(body); err == nil {
			// The decoded payload and its rewriting take the place
			// the capture was charged for, and more.
			if !hold.grow(ctx, rewriteFactor*int64(len(d))-hold.n, s.lim.BusyWait) {
				setContentHeaders(h, ui, true)
				s.busy(w, r, "memory")
				return
			}
			body = d
		} else {
			h.Set("Content-Encoding", "gzip") // undecodable: pass it on as it came
		}
	}
	if ctype == "" && len(body) > 0 {
		ctype = http.DetectContentType(body)
	}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	mt := mediaType(ctype)
	// Keep the replay inside the archive: anything the rewriting missed
	// (URLs built by scripts) is blocked instead of fetched live.
	setContentHeaders(h, ui, !scriptedDocument(mt) || h.Get("Content-Encoding") != "")
	if !s.cfg.Frameless {
		sandboxFramed(h)
	}
	if executable(t.URL, mt) {
		setDownload(h, t.URL)
	}
	if h.Get("Content-Encoding") == "" {
		switch {
		case scriptedDocument(mt):
			var banner []byte
			if s.cfg.Frameless && (t.Mod == "" || t.Mod == ModMain) {
				banner = s.banner(ctx, t, v, ui)
			}
			framedUI, home := "", ""
			if !s.cfg.Frameless {
				framedUI = ui
			} else if banner != nil {
				home = ui
			}
			body = rw.HTML(body, replayScriptTagHome(t.URL, t.TS, framedUI, home), banner)
			s.stats.rewritten.Add(1)
		case mt == "text/css":
			body = rw.CSS(body)
			s.stats.rewritten.Add(1)
		case scriptMedia[mt]:
			body = rw.JS(body)
			s.stats.rewritten.Add(1)
		}
	}
	c = nil
	s.writeReply(w, r, status, body, hold, share)
}

// replayJSSource is replay.js as written; replayJS, with the attribute
// table of internal/webrefs written in (withTable), is the script
// replayed pages load from replayJSPath: it rewrites the URLs their
// scripts make at run time.
//
//go:embed replay.js
var replayJSSource []byte

var replayJS = withTable(replayJSSource)

// replayJSPath is where the gateway serves replayJS.
const replayJSPath = "/static/replay.js"

// replayJSHash identifies replayJS's content: its ETag, and the version
// in the URL pages load it from, so that a browser that cached one
// release's script for a day loads the next release's at once.
var replayJSHash = fmt.Sprintf("%x", sha256.Sum256(replayJS))[:16]

// replayJSTag is replayJS's ETag.
var replayJSTag = `"` + replayJSHash + `"`

// replayScriptTag returns the element that loads replayJS into a document
// archived at url and replayed at ts (as the reader wrote it). ui is the UI
// origin whose framed replay page the document is shown in, or "" in
// frameless mode.
func replayScriptTag(url, ts, ui string) []byte { return replayScriptTagHome(url, ts, ui, "") }

// replayScriptTagHome is replayScriptTag with home, in frameless mode the
// UI origin, whose pages the banner links to: replay.js lets navigations
// to it go instead of taking them into the archive.
func replayScriptTagHome(url, ts, ui, home string) []byte {
	tag := `<script src="` + replayJSPath + `?v=` + replayJSHash + `" data-herod-url="` + html.EscapeString(url) +
		`" data-herod-ts="` + html.EscapeString(ts) + `"`
	if ui != "" {
		tag += ` data-herod-ui="` + html.EscapeString(ui) + `"`
	}
	if home != "" {
		tag += ` data-herod-home="` + html.EscapeString(home) + `"`
	}
	return []byte(tag + `></script>`)
}

// serveScript answers for one of the gateway's own scripts, js, whose
// ETag is etag.
func serveScript(w http.ResponseWriter, r *http.Request, js []byte, etag string) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, http.StatusOK, js)
}

// redirect answers with a redirect to the gateway path loc. Unlike
// http.Redirect it does not clean the path, which would collapse the "//"
// of the embedded URL.
func redirect(w http.ResponseWriter, r *http.Request, loc string, code int) {
	w.Header().Set("Location", loc)
	writeBody(w, r, code, nil)
}

func writeBody(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// mediaType returns the lower-case media type of a Content-Type value.
func mediaType(ctype string) string {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt, _, _ = strings.Cut(ctype, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

func isGzip(b []byte) bool { return len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b }

// gzipEncoded reports whether an archived payload is still gzip content
// coding (a crawler that did not decode it): the header says so and the
// bytes agree. A gzip file served as such (application/gzip) is not.
func gzipEncoded(h http.Header, body []byte) bool {
	return isGzip(body) && strings.EqualFold(strings.TrimSpace(h.Get("Content-Encoding")), "gzip")
}

// gunzip decodes a gzip payload of at most maxDecoded bytes.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	d, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, err
	}
	if len(d) > maxDecoded {
		return nil, errors.New("gateway: decoded payload too large")
	}
	return d, nil
}

// selectVersion returns the index of the newest version in vs (oldest first)
// whose time is not after t, or 0 when all are newer; -1 if vs is empty.
func selectVersion(vs []archive.Version, t time.Time) int {
	if len(vs) == 0 {
		return -1
	}
	best := 0
	for i, v := range vs {
		if !v.Time.After(t) {
			best = i
		}
	}
	return best
}
