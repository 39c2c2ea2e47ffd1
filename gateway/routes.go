package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/herod-archive/herod/internal/canon"
)

// Routing of the two origins: what each answers, and what it sends to the
// other.

var _ http.Handler = (*Server)(nil)

// serveUI routes a request to the UI origin. It does not use
// http.ServeMux on purpose: the mux would "clean" the double slash of an
// embedded http:// URL.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	s.stats.requests.Add(1)
	setUIHeaders(w.Header(), s.contentOrigin(r))
	p := r.URL.EscapedPath()
	if p == seedPath {
		s.serveSeed(w, r)
		return
	}
	if p == purgePath {
		s.servePurge(w, r)
		return
	}
	if p == importPath { // importadmin.go
		s.serveImport(w, r)
		return
	}
	if p == accessPath { // accessadmin.go
		s.serveAccess(w, r)
		return
	}
	if p == rankPath { // links.go
		s.serveRank(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.errorPage(w, r, http.StatusMethodNotAllowed, "Only GET and HEAD are supported.", "")
		return
	}
	switch {
	case p == "/":
		s.serveHome(w, r)
	case strings.HasPrefix(p, "/web/"):
		s.serveUIWeb(w, r, strings.TrimPrefix(p, "/web/"))
	case strings.HasPrefix(p, "/timemap/link/"):
		s.serveTimemap(w, r, strings.TrimPrefix(p, "/timemap/link/"))
	case strings.HasPrefix(p, "/timegate/"):
		s.serveTimegate(w, r, strings.TrimPrefix(p, "/timegate/"))
	case p == uiJSPath:
		serveScript(w, r, uiJS, uiJSTag)
	case p == swPath:
		s.serveSW(w, r)
	case p == bannerPath:
		s.serveBannerJSON(w, r)
	case p == searchPath: // search.go
		s.clientSlot(w, r, func(w http.ResponseWriter, r *http.Request, _ *client) { s.serveSearch(w, r) })
	case p == linksPath:
		s.serveLinks(w, r)
	case p == "/cdx":
		s.clientSlot(w, r, func(w http.ResponseWriter, r *http.Request, cl *client) { s.serveCDX(paced(r, w, cl), r) })
	case p == "/export" && s.exp != nil:
		s.clientSlot(w, r, s.serveExport)
	case p == replayJSPath:
		toOrigin(w, r, s.contentOrigin(r), http.StatusMovedPermanently)
	case (p == "/ring" && s.cfg.Ring != nil) || ((p == "/api/status" || p == "/status") && s.cfg.Status != nil) || (p == "/metrics" && s.cfg.Metrics != nil):
		if !s.statusAllowed(r) {
			s.errorPage(w, r, http.StatusForbidden, "This node's status is private: open it from the node's own machine, "+
				"or send the admin token (Authorization: Bearer, from the data directory's "+AdminTokenFile+"). "+
				"The operator can make it public with --public-status.", "")
			return
		}
		switch p {
		case "/ring":
			s.serveRing(w, r)
		case "/api/status":
			s.serveStatus(w, r)
		case "/status":
			s.serveStatusPage(w, r)
		default:
			s.cfg.Metrics.ServeHTTP(w, r)
		}
	default:
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
	}
}

// serveUIWeb answers /web/ paths on the UI origin: the dates, prefix
// listings and "latest" redirects itself, a replay as the framed page (or,
// frameless, a redirect to the content origin), and any replay with a
// modifier (id_, if_, im_…) by a redirect to the content origin, which
// alone serves archived bytes.
func (s *Server) serveUIWeb(w http.ResponseWriter, r *http.Request, rest string) {
	t, err := ParseWebPath(rest, r.URL.RawQuery)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "This is not an archive address: "+err.Error()+
			". Use /web/<YYYYMMDDhhmmss>/<http or https URL> or /web/*/<URL>.", "")
		return
	}
	switch {
	case t.Kind == KindDates:
		s.serveDates(w, r, t.URL)
	case t.Kind == KindPrefix:
		s.servePrefix(w, r, t.URL)
	case t.Kind == KindLatest:
		s.serveLatest(w, r, t.URL)
	case (t.Mod == "" || t.Mod == ModMain) && !s.cfg.Frameless:
		s.serveFrame(w, r, t)
	default:
		toOrigin(w, r, s.contentOrigin(r), http.StatusFound)
	}
}

// serveContent routes a request to the content origin. Archived captures
// are all it serves: every other path is the UI's (a redirect there) or,
// asked by a replayed page, a root-relative URL of the archived site.
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request) {
	s.stats.requests.Add(1)
	ui := s.uiOrigin(r)
	if r.Header.Get("Service-Worker") != "" {
		// An archived page registering a service worker: the worker
		// would outlive the page and answer for every capture.
		setContentHeaders(w.Header(), ui, true)
		s.stats.refused.Add(1)
		http.Error(w, "gateway: archived pages cannot register service workers", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		setContentHeaders(w.Header(), ui, true)
		w.Header().Set("Allow", "GET, HEAD")
		s.errorPage(w, r, http.StatusMethodNotAllowed, "Only GET and HEAD are supported.", "")
		return
	}
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/web/"):
		t, err := ParseWebPath(strings.TrimPrefix(p, "/web/"), r.URL.RawQuery)
		switch {
		case err != nil || t.Kind != KindReplay:
			toOrigin(w, r, ui, http.StatusFound)
		case !s.cfg.Frameless && r.Header.Get("Sec-Fetch-Dest") == "document" && t.Mod != ModRaw:
			// Opened on its own (a new tab or window, a link from
			// elsewhere): show it framed, under the banner.
			redirect(w, r, ui+webPath(t.TS, "", t.URL), http.StatusFound)
		default:
			s.serveReplay(w, r, t)
		}
	case p == replayJSPath:
		serveScript(w, r, replayJS, replayJSTag)
	default:
		if loc, ok := fromReplay(r); ok {
			// A replayed page asked for a root-relative URL that no
			// rewriting reached (markup a script wrote, a script's
			// navigation): it meant its own site.
			w.Header().Set("Vary", "Referer")
			redirect(w, r, loc, http.StatusTemporaryRedirect)
			return
		}
		toOrigin(w, r, ui, http.StatusFound)
	}
}

// fromReplay returns the archive path that a request for a path that is
// not the gateway's own stands for when a replayed page made it: the
// request's Referer is a /web/<ts>/<url> page of this gateway, so the path
// (and query) belongs to that URL's site, at the same timestamp. Frames
// keep their modifier; everything else gets none.
func fromReplay(r *http.Request) (string, bool) {
	ref, err := url.Parse(r.Referer())
	if err != nil || ref.Host != r.Host || !strings.HasPrefix(ref.EscapedPath(), "/web/") {
		return "", false
	}
	t, err := ParseWebPath(strings.TrimPrefix(ref.EscapedPath(), "/web/"), ref.RawQuery)
	if err != nil || t.Kind != KindReplay {
		return "", false
	}
	page, err := url.Parse(t.URL)
	if err != nil {
		return "", false
	}
	target := page.Scheme + "://" + page.Host + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	abs, err := canon.Canonical(target)
	if err != nil {
		return "", false
	}
	mod := ""
	if t.Mod == ModIframe || t.Mod == ModFrame {
		mod = t.Mod
	}
	return webPath(t.TS, mod, abs), true
}
