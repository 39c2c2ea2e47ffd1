package sampleweb

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// resolve.go maps a request (host, path, query, day) to the resource the
// sample web serves for it. The server and the reachability model both go
// through lookup, so they cannot disagree about what exists.

// resource is what one URL answers on one day.
type resource struct {
	status   int    // 200, 301 or 404
	ctype    string // Content-Type
	body     []byte // nil unless asked for
	etag     string // ETag of body, when known in advance
	lastMod  int    // day the body last changed
	location ref    // redirect target, when status is 301
	links    []ref  // links a crawler finds in the body (HTML only)
}

const (
	typeHTML = "text/html; charset=utf-8"
	typeCSS  = "text/css; charset=utf-8"
	typeJS   = "text/javascript; charset=utf-8"
	typeText = "text/plain; charset=utf-8"
)

// lookup returns what host h serves for path and raw query on day d. Bodies
// are rendered only when body is true (the model needs links, not bytes).
func (m *model) lookup(h int, path, query string, d int, bases []string, body bool) resource {
	if h < 0 || h >= m.hosts || d < 0 {
		return m.notFound(body)
	}
	if n, ok := parsePagePath(path); ok {
		if n >= m.pageCount(h, d) {
			return m.notFound(body)
		}
		s := m.state(h, n, d)
		res := resource{status: 200, ctype: typeHTML, lastMod: s.lastMod, links: s.refs()}
		if body {
			res.body, res.etag = m.pageBody(s, bases)
		}
		return res
	}
	if res, ok := m.asset(h, path); ok {
		return res
	}
	switch {
	case m.plain:
		// A plain site has nothing but pages, assets and robots.txt.
	case path == "/moved.html":
		res := resource{status: 301, ctype: typeHTML, location: ref{kind: refPage, h: h, n: m.movedTarget(h)}}
		if body {
			res.body = []byte("<!DOCTYPE html>\n<html><head><title>Moved</title></head><body><p>This page has moved <a href=\"" +
				pagePath(m.movedTarget(h)) + "\">here</a>.</p></body></html>\n")
		}
		res.links = []ref{res.location}
		return res
	case strings.HasPrefix(path, disallowed) && strings.HasSuffix(path, ".html"):
		k, ok := smallNumber(path[len(disallowed):len(path)-len(".html")], privatePaths)
		if !ok {
			break
		}
		res := resource{status: 200, ctype: typeHTML, links: m.privateLinks(h, k)}
		if body {
			res.body = m.renderSimple(h, disallowed, "Private "+strconv.Itoa(k), 1000+uint64(k), res.links, bases)
		}
		return res
	case path == "/search":
		q := ""
		if v, err := url.ParseQuery(query); err == nil {
			q = v.Get("q")
		}
		res := resource{status: 200, ctype: typeHTML, links: m.searchLinks(h, q)}
		if body {
			res.body = m.renderSimple(h, "/", "Search results for "+escape(q), uint64(len(q)), res.links, bases)
		}
		return res
	}
	return m.notFound(body)
}

// assetKey names a constant resource of a host.
type assetKey struct {
	h    int
	path string
}

// asset returns the image, stylesheet, script or robots.txt at path, which
// never change; they are built once and then shared (callers must not
// modify the body).
func (m *model) asset(h int, path string) (resource, bool) {
	k := assetKey{h, path}
	if v, ok := m.assets.Load(k); ok {
		return v.(resource), true
	}
	res, ok := m.buildAsset(h, path)
	if ok {
		res.etag = etag(res.body)
		m.assets.Store(k, res)
	}
	return res, ok
}

func (m *model) buildAsset(h int, path string) (resource, bool) {
	switch {
	case path == "/robots.txt" && m.robotsFailing():
		return resource{status: m.robotsStatus, ctype: typeText, body: []byte(http.StatusText(m.robotsStatus) + "\n")}, true
	case path == "/robots.txt":
		return resource{status: 200, ctype: typeText, body: m.robots()}, true
	case path == "/css/site.css":
		return resource{status: 200, ctype: typeCSS, body: m.stylesheet(h, -1)}, true
	case path == "/js/app.js":
		return resource{status: 200, ctype: typeJS, body: m.script(h, -1)}, true
	case path == "/img/logo.png":
		b, t := m.image(h, -1)
		return resource{status: 200, ctype: t, body: b}, true
	case strings.HasPrefix(path, "/css/") && strings.HasSuffix(path, ".css"):
		if sec := sectionIndex(path[len("/css/") : len(path)-len(".css")]); sec >= 0 {
			return resource{status: 200, ctype: typeCSS, body: m.stylesheet(h, sec)}, true
		}
	case strings.HasPrefix(path, "/js/") && strings.HasSuffix(path, ".js"):
		if sec := sectionIndex(path[len("/js/") : len(path)-len(".js")]); sec >= 0 {
			return resource{status: 200, ctype: typeJS, body: m.script(h, sec)}, true
		}
	case strings.HasPrefix(path, "/img/"):
		name, _, _ := strings.Cut(path[len("/img/"):], ".")
		if k, ok := smallNumber(name, imagePool); ok && imagePath(k) == path {
			b, t := m.image(h, k)
			return resource{status: 200, ctype: t, body: b}, true
		}
	}
	return resource{}, false
}

func (m *model) notFound(body bool) resource {
	res := resource{status: 404, ctype: typeHTML}
	if body {
		res.body = []byte("<!DOCTYPE html>\n<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1><p>The sample web has no such page.</p></body></html>\n")
	}
	return res
}

func sectionIndex(s string) int {
	for i, name := range sections {
		if name == s {
			return i
		}
	}
	return -1
}

// smallNumber parses s as a decimal number (digits only, no leading zero)
// and reports whether it is one below limit.
func smallNumber(s string, limit int) (int, bool) {
	if s == "" || len(s) > 6 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	k, err := strconv.Atoi(s)
	if err != nil || k >= limit {
		return 0, false
	}
	return k, true
}
