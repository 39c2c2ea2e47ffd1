package gateway

import (
	_ "embed"
	"encoding/json"
	"net/http"
)

// The framed replay page costs a reader a round trip to the UI origin
// before the content frame starts loading. A service worker on the UI
// origin (sw.js, scope /web/) removes it for every replay after the
// reader's first page of the gateway: it writes the framed page itself,
// from the shell below, and the frame's request leaves at once. ui.js
// registers it from the UI's pages; frameless gateways serve a worker that
// unregisters itself.

// swJS is the service worker's code (see sw.js).
//
//go:embed sw.js
var swJS []byte

// swPath is where the UI origin serves the service worker; its scope is
// swScope.
const (
	swPath  = "/sw.js"
	swScope = "/web/"
)

// Fields of the shell's template that the worker fills with the escaped
// frame source, URL and timestamp of the navigation.
const (
	shellSrc = "@@SRC@@"
	shellURL = "@@URL@@"
	shellTS  = "@@TS@@"
)

// swConfig is the worker's HEROD object.
type swConfig struct {
	Shell     string            `json:"shell"`
	Headers   map[string]string `json:"headers"`
	Content   string            `json:"content"`
	Frameless bool              `json:"frameless"`
}

// serveSW answers swPath with the service worker of r's origins: the
// shell of the framed page (framePage, pending), the UI origin's security
// headers for it, and the content origin. It is never cached, so that a
// gateway's new shell or origins reach its readers' workers at their next
// update check.
func (s *Server) serveSW(w http.ResponseWriter, r *http.Request) {
	content := s.contentOrigin(r)
	h := http.Header{}
	setUIHeaders(h, content)
	cfg := swConfig{Content: content, Frameless: s.cfg.Frameless, Headers: map[string]string{
		"Content-Type": "text/html; charset=utf-8",
	}}
	for k := range h {
		cfg.Headers[k] = h.Get(k)
	}
	if !s.cfg.Frameless {
		cfg.Shell = string(framePage(bannerData{URL: shellURL, Date: "…"}, shellSrc, content, shellTS, true))
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		s.log.Error("gateway: service worker", "err", err)
		http.Error(w, "gateway: cannot write the service worker", http.StatusInternalServerError)
		return
	}
	body := append(append([]byte("var HEROD = "), js...), ";\n"...)
	body = append(body, swJS...)
	wh := w.Header()
	wh.Set("Content-Type", "text/javascript; charset=utf-8")
	wh.Set("Cache-Control", "no-cache")
	writeBody(w, r, http.StatusOK, body)
}
