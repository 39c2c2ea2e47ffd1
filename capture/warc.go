package capture

import (
	"net/http"

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
// own length), as the crawler's client does for what it decodes.
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
			Truncated: x.Truncated, Browser: true,
		})
	}
	return out
}
