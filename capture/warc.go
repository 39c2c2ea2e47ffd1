package capture

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// ToArchive returns the responses of r as archive captures, each marked
// as captured in a browser (archive.Capture.Browser), for Store.Put as
// any crawled capture: the first answered GET of each URL, the page's
// document, subresources, fetch/XHR answers and redirect hops (their
// bodies empty) alike. Failed requests, requests of other methods and
// URLs that do not canonicalize are left out; a response whose body was
// not kept for the byte cap is a capture with Truncated "length" and an
// empty body. The browser hands bodies decoded, so Content-Encoding and
// Content-Length are dropped from the headers (the archive writes its
// own length), as the crawler's client does for what it decodes. Each
// capture carries the request head the browser reported for it
// (requestHead).
func (r *Result) ToArchive() []archive.Capture {
	var out []archive.Capture
	seen := map[string]bool{}
	for _, x := range r.Exchanges {
		if x.Status == 0 || x.Method != http.MethodGet {
			continue
		}
		redirect := x.Status/100 == 3
		if x.Body == nil && !redirect && x.Truncated == "" {
			continue // the load failed after its headers came
		}
		u, err := canon.Canonical(x.URL)
		if err != nil || seen[u] {
			continue
		}
		seen[u] = true
		h := x.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		for _, k := range []string{"Content-Encoding", "Content-Length", "Transfer-Encoding"} {
			h.Del(k)
		}
		body := x.Body
		if body == nil || x.Truncated != "" {
			body = []byte{}
		}
		out = append(out, archive.Capture{
			URL: u, Time: x.Received, Status: x.Status, Header: h, Body: body,
			Truncated: x.Truncated, Browser: true, Request: requestHead(x),
		})
	}
	return out
}

// requestHead returns the HTTP request head of x as the browser reported
// it: the request line ("GET", the request-URI, "HTTP/1.1"), Host, then
// the header fields in name order, one line per value. The fields are
// those the browser reported sending (Exchange.SentHeader, pseudo-header
// fields and Host left out, as the request line and Host hold them) when
// it reported them, else those of Network.requestWillBeSent, which lack
// what the browser adds when it sends (Accept-Encoding, Connection,
// Cookie); nothing is made up. A URL without a host, a field that would
// break the head (a CR or LF in it, a name that is not a token) or a
// head over archive.MaxRequestHead gives none.
func requestHead(x Exchange) []byte {
	u, err := url.Parse(x.URL)
	if err != nil || u.Host == "" || !validHeadText(x.Method) {
		return nil
	}
	var b strings.Builder
	b.Grow(512)
	b.WriteString(x.Method + " " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	h := x.RequestHeader
	if x.SentHeader != nil {
		h = x.SentHeader
	}
	names := make([]string, 0, len(h))
	for k := range h {
		if !strings.EqualFold(k, "Host") && !strings.HasPrefix(k, ":") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if !validHeadText(k) || strings.ContainsAny(k, ": ") {
			return nil
		}
		for _, v := range h[k] {
			if strings.ContainsAny(v, "\r\n") {
				return nil
			}
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	if b.Len() > archive.MaxRequestHead {
		return nil
	}
	return []byte(b.String())
}

// validHeadText reports whether s is a non-empty run of visible ASCII.
func validHeadText(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
