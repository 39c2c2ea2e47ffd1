package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The gateway answers on two origins (see the package documentation): the
// UI origin, which serves the archive's own pages and endpoints, and the
// content origin, which serves archived bytes and nothing else. Each is
// configured as an origin spec: either a fixed origin, "http://host:port",
// or ":port", which means the host name the request came with and this
// port (a node reached as 192.168.1.5:5001 serves its content at
// 192.168.1.5:5002, one reached as 127.0.0.1:5001 at 127.0.0.1:5002).

// ErrOrigin reports a missing or malformed Config.UIOrigin or
// Config.ContentOrigin.
var ErrOrigin = errors.New("gateway: bad origin")

// originSpec is a parsed origin spec.
type originSpec struct {
	fixed string // "scheme://host[:port]", lower case; "" when derived
	host  string // fixed's host[:port] as a Host header carries it
	port  string // the port of a derived origin
}

// parseOrigin parses an origin spec: "scheme://host[:port]" (http or
// https, nothing after the host) or ":port".
func parseOrigin(s string) (originSpec, error) {
	if p, ok := strings.CutPrefix(s, ":"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return originSpec{}, fmt.Errorf("%w: %q: port 1-65535 expected", ErrOrigin, s)
		}
		return originSpec{port: p}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return originSpec{}, fmt.Errorf("%w: %q: %v", ErrOrigin, s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return originSpec{}, fmt.Errorf("%w: %q: want http(s)://host[:port] or :port", ErrOrigin, s)
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return originSpec{fixed: u.Scheme + "://" + host, host: host}, nil
}

// resolve returns the origin, "scheme://host:port", for a request r that
// reached either of the gateway's origins.
func (o originSpec) resolve(r *http.Request) string {
	if o.fixed != "" {
		return o.fixed
	}
	return scheme(r) + "://" + joinHostPort(requestHostname(r), o.port)
}

// matches reports whether r was addressed to this origin.
func (o originSpec) matches(r *http.Request) bool {
	if o.fixed != "" {
		return strings.EqualFold(r.Host, o.host)
	}
	_, port, err := net.SplitHostPort(r.Host)
	return err == nil && port == o.port
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// requestHostname returns the host name of r's Host header, without the
// port (an IPv6 literal without brackets).
func requestHostname(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		return h
	}
	return strings.Trim(r.Host, "[]")
}

func joinHostPort(host, port string) string {
	if port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// uiOrigin and contentOrigin return the two origins as seen by r.
func (s *Server) uiOrigin(r *http.Request) string      { return s.ui.resolve(r) }
func (s *Server) contentOrigin(r *http.Request) string { return s.content.resolve(r) }

// UI returns the handler of the UI origin: the form, dates, the framed
// replay page, the ring, status, CDX, Memento, exports and the admin
// endpoints. Serve it directly as an http.Server's Handler.
func (s *Server) UI() http.Handler { return s.limited(s.serveUI, true) }

// Content returns the handler of the content origin: archived captures
// under /web/ and the replay script, nothing else. Serve it directly as an
// http.Server's Handler, on its own address.
func (s *Server) Content() http.Handler { return s.limited(s.serveContent, false) }

// ServeHTTP serves both origins from one listener: a request whose Host is
// the content origin's goes to Content, every other to UI. It is meant for
// deployments where the two origins are two host names of one address
// (and for tests); a node listens on two ports and serves UI and Content.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.content.matches(r) {
		s.limited(s.serveContent, false)(w, r)
		return
	}
	s.limited(s.serveUI, true)(w, r)
}

// toOrigin redirects to path (and query) on origin, unchanged.
func toOrigin(w http.ResponseWriter, r *http.Request, origin string, code int) {
	loc := origin + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	redirect(w, r, loc, code)
}

// isIPHost reports whether r's Host names an IP address or localhost: a
// host that DNS rebinding cannot give to another site.
func isIPHost(r *http.Request) bool {
	h := strings.ToLower(requestHostname(r))
	return net.ParseIP(h) != nil || h == "localhost"
}
