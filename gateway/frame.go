package gateway

import (
	"crypto/sha256"
	_ "embed"
	"fmt"
	"net/http"
	"strings"

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
// replayJS.
var (
	uiJSHash = fmt.Sprintf("%x", sha256.Sum256(uiJS))[:16]
	uiJSTag  = `"` + uiJSHash + `"`
)

// bannerPath answers the framed page's script with the banner of a
// capture, as JSON.
const bannerPath = "/api/banner"

// frameSandbox is the sandbox of the content frame: its scripts, forms,
// popups (which open framed replays) and downloads work, and it keeps its
// own origin; it may navigate the top window only when the reader clicks
// (an archived link to _top), never on its own.
const frameSandbox = "allow-scripts allow-same-origin allow-forms allow-popups allow-popups-to-escape-sandbox " +
	"allow-modals allow-downloads allow-top-navigation-by-user-activation"

type frameData struct {
	bannerData
	Src, Content, AskedTS, Script, Sandbox string
}

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
	if len(vs) == 0 {
		s.notArchived(w, r, t.URL)
		return
	}
	s.stats.frames.Add(1)
	content := s.contentOrigin(r)
	s.render(w, r, http.StatusOK, "frame", frameData{
		bannerData: bannerFor(t.URL, vs, selectVersion(vs, t.Time)),
		Src:        content + webPath(t.TS, "", t.URL),
		Content:    content,
		AskedTS:    t.TS,
		Script:     uiJSPath + "?v=" + uiJSHash,
		Sandbox:    frameSandbox,
	})
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
	if len(vs) == 0 {
		s.countStatus(http.StatusNotFound)
		http.Error(w, "gateway: banner: not archived", http.StatusNotFound)
		return
	}
	writeJSON(w, s.log, bannerFor(u, vs, selectVersion(vs, tm)))
}
