package crawl

import (
	"mime"
	"net/url"
	"strings"

	"github.com/herod-archive/herod/internal/canon"
)

// Error kinds counted in Stats.ErrorsByKind. Scope kinds are counted when a
// link is refused; fetch kinds when a fetch does not produce a version.
const (
	KindBadURL      = "bad_url"          // not an absolute http(s) URL
	KindTooLong     = "too_long"         // longer than MaxURLLen
	KindDynamic     = "dynamic"          // query string or cgi-bin, AllowDynamic off
	KindRequisites  = "requisite_cap"    // requisite with a query over PageRequisites or HostRequisites
	KindTrap        = "trap"             // repeated path segments or too deep
	KindHostDenied  = "host_denied"      // host allow/deny lists
	KindRobots      = "robots"           // disallowed by robots.txt
	KindFetch       = "fetch"            // network error
	KindTimeout     = "timeout"          // request deadline exceeded
	KindInternal    = "internal_address" // resolved to a special-purpose address outside Config.AllowPrivate
	KindStatus4xx   = "status_4xx"       // 4xx answer, not stored
	KindStatus5xx   = "status_5xx"       // 5xx answer, not stored
	KindStatusOther = "status_other"     // 1xx or unknown status, not stored
	KindContentType = "content_type"     // media type outside ContentTypes or in DenyTypes
	KindTooLarge    = "too_large"        // body above MaxBody, refused
	KindArchive     = "archive"          // archive Put, State or SetState failed
	KindQuota       = "quota"            // archive quota reached, nothing stored
	KindForward     = "forward"          // Forwarder failed; links kept for a retry
	KindQueue       = "queue"            // queue database error
	// KindRedirectChain counts redirect targets not followed because the
	// chain reached MaxRedirects (redirect.go).
	KindRedirectChain = "redirect_chain"
	// KindHostNewURLs counts URLs never known before that were not queued
	// because their host had HostNewURLs of them today.
	KindHostNewURLs = "host_new_urls"
)

// scope decides which URLs the crawler admits. It is immutable after
// construction and safe for concurrent use.
type scope struct {
	allowDynamic bool
	maxLen       int
	maxRepeat    int
	maxDepth     int
	allow, deny  []string
}

func newScope(cfg Config) *scope {
	norm := func(hs []string) []string {
		out := make([]string, 0, len(hs))
		for _, h := range hs {
			h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
			if h != "" {
				out = append(out, h)
			}
		}
		return out
	}
	return &scope{
		allowDynamic: cfg.AllowDynamic,
		maxLen:       cfg.MaxURLLen,
		maxRepeat:    cfg.MaxRepeat,
		maxDepth:     cfg.MaxDepth,
		allow:        norm(cfg.AllowHosts),
		deny:         norm(cfg.DenyHosts),
	}
}

// check canonicalizes raw and returns it, or the error kind that refuses it.
func (s *scope) check(raw string) (string, string) {
	u, err := canon.Parse(raw)
	if err != nil {
		if len(raw) > canon.MaxLen {
			return "", KindTooLong
		}
		return "", KindBadURL
	}
	return s.checkURL(u)
}

// checkReq is check for a page requisite (checkRequisite); dynamic
// reports a requisite the dynamic rule alone would refuse.
func (s *scope) checkReq(raw string) (c string, dynamic bool, kind string) {
	u, err := canon.Parse(raw)
	if err != nil {
		if len(raw) > canon.MaxLen {
			return "", false, KindTooLong
		}
		return "", false, KindBadURL
	}
	c, kind = s.checkRequisite(u, u.String())
	return c, kind == "" && !s.allowDynamic && isDynamic(u), kind
}

// checkURL is check for an already canonical URL.
func (s *scope) checkURL(u *url.URL) (string, string) {
	return s.checkParsed(u, u.String())
}

// checkParsed is checkURL for a URL whose String() is c.
func (s *scope) checkParsed(u *url.URL, c string) (string, string) {
	if !s.allowDynamic && isDynamic(u) {
		return "", KindDynamic
	}
	return s.checkRequisite(u, c)
}

// checkRequisite is checkParsed for a page requisite: a dynamic URL is
// admitted even when AllowDynamic is off (the caller bounds how many);
// every other rule holds.
func (s *scope) checkRequisite(u *url.URL, c string) (string, string) {
	if len(c) > s.maxLen {
		return "", KindTooLong
	}
	if isTrap(u.Path, s.maxRepeat, s.maxDepth) {
		return "", KindTrap
	}
	if !s.hostAllowed(u.Host) {
		return "", KindHostDenied
	}
	return c, ""
}

// hostAllowed applies the deny list, then the allow list. hostport is the
// canonical URL host, with a port when it is not the default.
func (s *scope) hostAllowed(hostport string) bool {
	for _, d := range s.deny {
		if hostMatch(hostport, d) {
			return false
		}
	}
	if len(s.allow) == 0 {
		return true
	}
	for _, a := range s.allow {
		if hostMatch(hostport, a) {
			return true
		}
	}
	return false
}

// hostMatch reports whether hostport is pattern or a subdomain of it. A
// pattern with a port matches only that host and port; one without a port
// matches any port.
func hostMatch(hostport, pattern string) bool {
	if hostport == pattern || strings.HasSuffix(hostport, "."+pattern) {
		return true
	}
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		host = hostport[:i]
	}
	if strings.Contains(pattern, ":") && !strings.HasPrefix(pattern, "[") {
		return false
	}
	return host == pattern || strings.HasSuffix(host, "."+pattern)
}

// isDynamic reports a URL with a query string or a cgi-bin path segment.
func isDynamic(u *url.URL) bool { return u.RawQuery != "" || hasSegment(u.Path, "cgi-bin") }

func hasSegment(p, seg string) bool {
	for _, s := range strings.Split(p, "/") {
		if strings.EqualFold(s, seg) {
			return true
		}
	}
	return false
}

// isTrap reports a path with more than maxDepth segments or a segment that
// occurs more than maxRepeat times.
func isTrap(p string, maxRepeat, maxDepth int) bool {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) > maxDepth {
		return true
	}
	if len(segs) <= maxRepeat {
		return false
	}
	counts := make(map[string]int, len(segs))
	for _, s := range segs {
		if s == "" {
			continue
		}
		counts[s]++
		if counts[s] > maxRepeat {
			return true
		}
	}
	return false
}

// typeAllowed reports whether a response of Content-Type header value ct
// is stored under the crawler's Config: in ContentTypes when that is set,
// and not in DenyTypes. With no allow list, a value that does not parse
// is stored too (the bytes are what the server sent); a deny list entry
// cannot match it.
func (c *Crawler) typeAllowed(ct string) bool {
	if typeMatch(ct, c.cfg.DenyTypes) {
		return false
	}
	return len(c.cfg.ContentTypes) == 0 || typeMatch(ct, c.cfg.ContentTypes)
}

// typeMatch reports whether the Content-Type header value ct matches a
// list of media types (entries "type/subtype", "type/*" or "*/*").
func typeMatch(ct string, list []string) bool {
	mt := mediaType(ct)
	if mt == "" {
		return false
	}
	major, _, _ := strings.Cut(mt, "/")
	for _, a := range list {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == mt || a == "*/*" || (strings.HasSuffix(a, "/*") && a[:len(a)-2] == major) {
			return true
		}
	}
	return false
}

// mediaType returns the lower-case media type of a Content-Type value, or
// "" when it cannot be parsed.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		// Tolerate junk parameters: keep the part before ';'.
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		if !strings.Contains(mt, "/") {
			return ""
		}
	}
	return mt
}

// isHTML, isCSS and isJS select the link extractor for a media type.
func isHTML(mt string) bool { return mt == "text/html" || mt == "application/xhtml+xml" }
func isCSS(mt string) bool  { return mt == "text/css" }
func isJS(mt string) bool {
	switch mt {
	case "text/javascript", "application/javascript", "application/x-javascript",
		"application/ecmascript", "text/ecmascript":
		return true
	}
	return false
}
