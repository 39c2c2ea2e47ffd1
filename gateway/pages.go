package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"html"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.ParseFS(templateFS, "templates/*.html"))

// render executes the named page template and writes it with status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("gateway: template", "name", name, "err", err)
		http.Error(w, "gateway: page rendering failed", http.StatusInternalServerError)
		return
	}
	out := b.Bytes()
	if !s.content.matches(r) {
		out = s.uiHead(w, r, out)
	} else {
		// A page of the UI shown in the content frame (an error): its
		// links and form lead to the UI origin, in the top window; framed,
		// where the frame's sandbox lets no document navigate the top,
		// errorFrameJS asks the framed page to follow them. It runs in an
		// opaque origin (sandboxed without allow-same-origin), allowed by
		// its hash alone.
		ui := s.uiOrigin(r)
		head := `<head><base href="` + html.EscapeString(ui) + `/" target="_top">`
		if d, ok := data.(errorData); ok && d.Reopen != "" {
			head += `<meta name="herod-reopen" content="` + html.EscapeString(d.Reopen) + `" data-how="` + html.EscapeString(d.How) + `">`
		}
		out = bytes.Replace(out, []byte("<head>"), []byte(head+`<script>`+errorFrameJS+`</script>`), 1)
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src "+errorFrameJSSource+
			"; base-uri "+ui+"; form-action "+ui+"; frame-ancestors 'self' "+ui+sandboxCSP+" allow-scripts allow-top-navigation-by-user-activation")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeBody(w, r, status, out)
}

// uiHead readies a page of the UI origin for the reader's next step, a
// replay: the browser opens a connection to the content origin while the
// reader reads (a preconnect link and header), and, when replays are
// framed, ui.js registers the service worker that writes the framed page
// without a round trip (sw.go).
func (s *Server) uiHead(w http.ResponseWriter, r *http.Request, page []byte) []byte {
	content := s.contentOrigin(r)
	w.Header().Add("Link", "<"+content+">; rel=preconnect")
	head := `<link rel="preconnect" href="` + html.EscapeString(content) + `">`
	if !s.cfg.Frameless {
		head += `<script src="` + uiJSPath + `?v=` + uiJSHash + `" defer></script>`
	}
	return bytes.Replace(page, []byte("</head>"), []byte(head+"</head>"), 1)
}

type formData struct {
	URL, Date string
	Search    *searchData // the home page's search box, when the node has an index
}

// serveHome serves the form, and turns its submission into a /web/ path:
// the dates list, or the replay at the given date.
func (s *Server) serveHome(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	raw := strings.TrimSpace(q.Get("url"))
	if raw == "" {
		s.render(w, r, http.StatusOK, "home", formData{Search: s.searchBox()})
		return
	}
	u, err := ArchivedURL(raw)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Not an http or https URL: "+err.Error(), "")
		return
	}
	date, err := parseFormDate(q.Get("date"))
	if err != nil {
		s.countStatus(http.StatusBadRequest)
		s.render(w, r, http.StatusBadRequest, "error", errorData{Title: "400 " + http.StatusText(http.StatusBadRequest),
			Message: strings.TrimPrefix(err.Error(), "gateway: "), Form: formData{URL: raw, Date: q.Get("date")}})
		return
	}
	if date == "" {
		redirect(w, r, webPath("*", "", u), http.StatusFound)
		return
	}
	redirect(w, r, webPath(date, "", u), http.StatusFound)
}

type errorData struct {
	Title, Message   string
	URL, Other, Host string
	Form             formData
	Framed           bool // shown in the content frame, which cannot leave for the live web
	// Link is a UI path the page offers (reopen).
	Link string
	// Reopen, in the content frame, is the UI URL that errorFrameJS asks
	// the framed page to open at once (herod:open) as How says:
	// "replace" (the UI's own page in place of the framed one) or
	// "reframe" (the capture's bytes in an unsandboxed frame).
	Reopen, How string
}

// errorFrameJS is the script of an error page shown in the content frame
// (render): a click on a link or a GET form's submission asks the framed
// page (ui.js, herod:open) to go there, as the frame's sandbox lets the
// page navigate no other window. Unframed it does nothing.
const errorFrameJS = `(function () {
  if (window.top === window.self) { return; }
  var ui = new URL(document.baseURI).origin;
  function go(e, href) {
    e.preventDefault();
    window.top.postMessage({ type: "herod:open", href: href, how: "top" }, ui);
  }
  var reopen = document.querySelector('meta[name="herod-reopen"]');
  if (reopen && window.parent === window.top) {
    window.top.postMessage({ type: "herod:open", href: reopen.content, how: reopen.getAttribute("data-how") }, ui);
  }
  document.addEventListener("click", function (e) {
    var a = e.target && e.target.closest ? e.target.closest("a[href]") : null;
    if (a) { go(e, a.href); }
  });
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (String(f.method).toLowerCase() !== "get") { return; }
    var u = new URL(f.action);
    u.search = new URLSearchParams(new FormData(f)).toString();
    go(e, u.href);
  });
})();`

// errorFrameJSSource is the CSP source that allows errorFrameJS.
var errorFrameJSSource = func() string {
	sum := sha256.Sum256([]byte(errorFrameJS))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// errorPage renders a page explaining what went wrong; url, when set, is the
// canonical URL the reader asked for and adds suggestions.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, msg, u string) {
	s.countStatus(status)
	d := errorData{Title: strconv.Itoa(status) + " " + http.StatusText(status), Message: msg,
		Framed: !s.cfg.Frameless && s.content.matches(r)}
	if u != "" {
		d.URL = u
		d.Form.URL = u
		if p, err := url.Parse(u); err == nil {
			if status == http.StatusNotFound { // a misspelling or the other scheme may be what is archived
				o := *p
				o.Scheme = map[string]string{"http": "https", "https": "http"}[p.Scheme]
				d.Other = o.String()
			}
			if s.list != nil {
				d.Host = p.Scheme + "://" + p.Host + "/"
			}
		}
	}
	if d.Framed && status == http.StatusNotFound && r.Header.Get("Sec-Fetch-Dest") == "iframe" {
		// A link followed in the content frame to a page not archived:
		// the UI shows its own page for it, top-level, in place of the
		// framed page of the page before.
		if t, err := ParseWebPath(strings.TrimPrefix(r.URL.EscapedPath(), "/web/"), r.URL.RawQuery); err == nil &&
			t.Kind == KindReplay && t.Mod == "" {
			d.Reopen, d.How = s.uiOrigin(r)+webPath("*", "", t.URL), "replace"
		}
	}
	s.render(w, r, status, "error", d)
}

// notArchived is the 404 page of a URL with no capture.
func (s *Server) notArchived(w http.ResponseWriter, r *http.Request, u string) {
	s.errorPage(w, r, http.StatusNotFound, "The archive has no capture of "+u+
		". The ring crawls what it is seeded with and what those pages link to.", u)
}

// chipLabel labels version i of vs (oldest first) in the list of dates:
// day and minute, with the seconds when a neighbour shares the minute, and
// the milliseconds when it shares the second, so no two chips read alike.
func chipLabel(vs []archive.Version, i int) string {
	same := func(d time.Duration) bool {
		t := vs[i].Time.UTC().Truncate(d)
		return (i > 0 && vs[i-1].Time.UTC().Truncate(d).Equal(t)) ||
			(i+1 < len(vs) && vs[i+1].Time.UTC().Truncate(d).Equal(t))
	}
	t := vs[i].Time.UTC()
	switch {
	case same(time.Second):
		return t.Format("Jan 2 15:04:05.000")
	case same(time.Minute):
		return t.Format("Jan 2 15:04:05")
	}
	return t.Format("Jan 2 15:04")
}

// serveDates lists the captures of u.
func (s *Server) serveDates(w http.ResponseWriter, r *http.Request, u string) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.cfg.Archive.Versions(ctx, u)
	if err != nil {
		s.archiveError(w, r, u, err)
		return
	}
	if len(vs) == 0 {
		s.notArchived(w, r, u)
		return
	}
	var checks []time.Time
	if c, ok := s.cfg.Archive.(Checker); ok {
		if checks, err = c.Checks(ctx, u); err != nil {
			s.log.Debug("gateway: checks", "url", u, "err", err)
			checks = nil // the versions alone
		}
	}
	d := groupDates(u, vs, checks)
	d.addShots(s.screenshots(ctx, u, vs), s.contentOrigin(r))
	d.Inlinks = s.inlinks(ctx, u, vs[len(vs)-1].Time)
	s.render(w, r, http.StatusOK, "dates", d)
}

// maxPrefixVersions bounds the versions a prefix listing asks the Lister for.
const maxPrefixVersions = 50000

type prefixURL struct {
	URL, First, Last, LastTS string
	Count                    int
}

type prefixData struct {
	Prefix    string
	URLs      []prefixURL
	Truncated bool
}

// servePrefix lists the archived URLs starting with prefix (needs a Lister).
func (s *Server) servePrefix(w http.ResponseWriter, r *http.Request, prefix string) {
	if s.list == nil {
		s.errorPage(w, r, http.StatusNotImplemented, "This node cannot list URLs by prefix.", "")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	vs, err := s.list.List(ctx, cdx.Query{URL: prefix, Match: cdx.MatchPrefix, Limit: maxPrefixVersions})
	if err != nil {
		s.archiveError(w, r, prefix, err)
		return
	}
	d := prefixData{Prefix: prefix, Truncated: len(vs) >= maxPrefixVersions}
	for _, v := range vs {
		t := v.Time.UTC()
		n := len(d.URLs)
		if n == 0 || d.URLs[n-1].URL != v.URL {
			d.URLs = append(d.URLs, prefixURL{URL: v.URL, First: t.Format(time.DateOnly)})
			n++
		}
		p := &d.URLs[n-1]
		p.Count++
		p.Last, p.LastTS = t.Format(time.DateOnly), FormatTimestamp(t)
	}
	if len(d.URLs) == 0 {
		s.errorPage(w, r, http.StatusNotFound, "The archive has no URL starting with "+prefix+".", "")
		return
	}
	s.render(w, r, http.StatusOK, "prefix", d)
}

// bannerData is what the banner shows about one capture: also the JSON
// the framed page's script asks /api/banner for.
type bannerData struct {
	URL       string `json:"url"`
	TS        string `json:"ts"`   // the capture's own timestamp
	Date      string `json:"date"` // the capture's time, UTC, "2006-01-02 15:04:05"
	Count     int    `json:"count"`
	PrevTS    string `json:"prevTs,omitempty"`
	PrevLabel string `json:"prevLabel,omitempty"`
	NextTS    string `json:"nextTs,omitempty"`
	NextLabel string `json:"nextLabel,omitempty"`
	// Fuzzy, when set, is the URL whose capture stands for URL, which has
	// none of its own (the fuzzy rules, fuzzy.json).
	Fuzzy string `json:"fuzzy,omitempty"`
	// Provenance says who fetched the capture and who witnessed it, when
	// (provenance.go).
	Provenance string `json:"provenance,omitempty"`
}

// bannerOf is bannerFor for a request of u answered with version i of vs,
// the versions of doc: u itself, or the URL a fuzzy match found.
func bannerOf(u, doc string, vs []archive.Version, i int) bannerData {
	d := bannerFor(u, vs, i)
	if doc != u {
		d.Fuzzy = doc
	}
	return d
}

// bannerFor returns the banner of version i of vs (versions of u, oldest
// first).
func bannerFor(u string, vs []archive.Version, i int) bannerData {
	v := vs[i]
	d := bannerData{URL: u, TS: VersionTimestamp(vs, i), Date: v.Time.UTC().Format(time.DateTime), Count: len(vs)}
	if i > 0 {
		d.PrevTS, d.PrevLabel = VersionTimestamp(vs, i-1), neighbourLabel(vs[i-1].Time, v.Time)
	}
	if i+1 < len(vs) {
		d.NextTS, d.NextLabel = VersionTimestamp(vs, i+1), neighbourLabel(vs[i+1].Time, v.Time)
	}
	return d
}

// neighbourLabel labels the previous or next capture n of a capture made
// at t: its date, with its time when it was made the same day (to the
// second when the same minute), so the link says where it leads.
func neighbourLabel(n, t time.Time) string {
	n, t = n.UTC(), t.UTC()
	switch {
	case n.Truncate(time.Minute).Equal(t.Truncate(time.Minute)):
		return n.Format(time.TimeOnly)
	case n.YearDay() == t.YearDay() && n.Year() == t.Year():
		return n.Format("15:04")
	}
	return n.Format(time.DateOnly)
}

// framelessBanner is what the frameless banner's template is given: the
// capture's banner and the UI origin its links to the archive's own
// pages go to (a root-relative link in a replayed page means the
// archived site's, fromReplay).
type framelessBanner struct {
	bannerData
	UI string
}

// banner renders the bar that frameless mode inserts at the top of
// replayed pages: the capture's date, links to the previous and next
// captures and to the list of dates, and a search box that searches as
// of the capture, on ui (the UI origin). The neighbours come from one
// Versions call; if it fails the banner goes without them.
func (s *Server) banner(ctx context.Context, t Target, v archive.Version, ui string) []byte {
	d := bannerData{URL: t.URL, TS: FormatTimestamp(v.Time), Date: v.Time.UTC().Format(time.DateTime)}
	if vs, err := s.cfg.Archive.Versions(ctx, t.URL); err == nil {
		for i := range vs {
			if vs[i].Time.Equal(v.Time) {
				d = bannerFor(t.URL, vs, i)
				break
			}
		}
	}
	d.Provenance = s.provenanceLine(ctx, v)
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "banner", framelessBanner{d, ui}); err != nil {
		s.log.Error("gateway: banner template", "err", err)
		return nil
	}
	return b.Bytes()
}

// writeJSON writes v as indented JSON.
func writeJSON(w http.ResponseWriter, log *slog.Logger, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		log.Error("gateway: json", "err", err)
		http.Error(w, "gateway: cannot encode JSON", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}
