package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Memento (RFC 7089) support: every replayed capture is a memento, the
// gateway is its own TimeGate and serves link-format TimeMaps.

// LinkFormat is the media type of a TimeMap.
const LinkFormat = "application/link-format"

// origin returns the scheme and host the client used to reach the gateway,
// for the absolute URIs Memento links carry.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// httpDate formats t as an HTTP date (RFC 7231), as Memento requires.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// linkURI quotes a URI for a Link header: characters that would end it are
// percent-encoded (a canonical URL has none, but be strict).
func linkURI(u string) string { return "<" + linkEscaper.Replace(u) + ">" }

// linkEscaper is linkURI's replacer, built once: building one took more
// than the rest of a framed page's headers.
var linkEscaper = strings.NewReplacer(">", "%3E", "<", "%3C", " ", "%20", "\"", "%22")

// mementoHeaders sets Memento-Datetime and the Link header of a memento of
// url captured at t.
// o is the UI origin, where the TimeGate and TimeMap are.
func (s *Server) mementoHeaders(h http.Header, o, url string, t time.Time) {
	h.Set("Memento-Datetime", httpDate(t))
	h.Set("Link", strings.Join([]string{
		linkURI(url) + `; rel="original"`,
		linkURI(o+"/timegate/"+url) + `; rel="timegate"`,
		linkURI(o+"/timemap/link/"+url) + `; rel="timemap"; type="` + LinkFormat + `"`,
	}, ", "))
}

// serveTimemap answers /timemap/link/<url> with every memento of url.
func (s *Server) serveTimemap(w http.ResponseWriter, r *http.Request, rest string) {
	url, err := s.parseURLPath(w, r, rest)
	if err != nil {
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.cfg.Archive.Versions(ctx, url)
	if err != nil {
		s.archiveError(w, r, url, err)
		return
	}
	if len(vs) == 0 {
		s.notArchived(w, r, url)
		return
	}
	o := origin(r)
	var b strings.Builder
	fmt.Fprintf(&b, "%s; rel=\"original\",\n", linkURI(url))
	fmt.Fprintf(&b, "%s; rel=\"self\"; type=\"%s\"; from=\"%s\"; until=\"%s\",\n",
		linkURI(o+"/timemap/link/"+url), LinkFormat, httpDate(vs[0].Time), httpDate(vs[len(vs)-1].Time))
	fmt.Fprintf(&b, "%s; rel=\"timegate\"", linkURI(o+"/timegate/"+url))
	for i, v := range vs {
		rel := "memento"
		switch {
		case len(vs) == 1:
			rel = "first last memento"
		case i == 0:
			rel = "first memento"
		case i == len(vs)-1:
			rel = "last memento"
		}
		fmt.Fprintf(&b, ",\n%s; rel=\"%s\"; datetime=\"%s\"",
			linkURI(o+webPath(VersionTimestamp(vs, i), "", url)), rel, httpDate(v.Time))
	}
	b.WriteString("\n")
	w.Header().Set("Content-Type", LinkFormat)
	writeBody(w, r, http.StatusOK, []byte(b.String()))
}

// serveTimegate answers /timegate/<url>: a 302 to the memento selected by
// the Accept-Datetime header (the newest when absent), with Vary. The
// header names a whole second, as Memento-Datetime does: the capture made
// during that second is selected, so the Memento-Datetime of a capture
// given back as Accept-Datetime leads to that capture.
func (s *Server) serveTimegate(w http.ResponseWriter, r *http.Request, rest string) {
	url, err := s.parseURLPath(w, r, rest)
	if err != nil {
		return
	}
	w.Header().Set("Vary", "accept-datetime")
	at := s.cfg.Now()
	if ad := r.Header.Get("Accept-Datetime"); ad != "" {
		t, err := http.ParseTime(strings.TrimSpace(ad))
		if err != nil {
			s.errorPage(w, r, http.StatusBadRequest,
				"Accept-Datetime must be an HTTP date such as \"Thu, 31 May 2007 20:35:00 GMT\".", "")
			return
		}
		at = EndOfSecond(t)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.cfg.Archive.Versions(ctx, url)
	if err != nil {
		s.archiveError(w, r, url, err)
		return
	}
	i := selectVersion(vs, at)
	if i < 0 {
		s.notArchived(w, r, url)
		return
	}
	o := origin(r)
	w.Header().Set("Link", strings.Join([]string{
		linkURI(url) + `; rel="original"`,
		linkURI(o+"/timemap/link/"+url) + `; rel="timemap"; type="` + LinkFormat + `"`,
	}, ", "))
	w.Header().Set("Location", webPath(VersionTimestamp(vs, i), "", url))
	writeBody(w, r, http.StatusFound, nil)
}

// parseURLPath reads the archived URL of a /timemap/ or /timegate/ path
// (with the request's query), answering 400 itself when it is malformed.
func (s *Server) parseURLPath(w http.ResponseWriter, r *http.Request, rest string) (string, error) {
	raw := rest
	if r.URL.RawQuery != "" {
		raw += "?" + r.URL.RawQuery
	}
	if len(raw) > maxPathLen {
		err := fmt.Errorf("%w: %d bytes", ErrBadPath, len(raw))
		s.errorPage(w, r, http.StatusBadRequest, err.Error(), "")
		return "", err
	}
	u, err := ArchivedURL(raw)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Not an http or https URL: "+err.Error(), "")
		return "", err
	}
	return u, nil
}
