package gateway

import (
	"net/url"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/webrefs"
)

// Rewriter maps the URLs found in one archived document to gateway paths
// that replay their targets at the same timestamp. It is a plain value
// used by one goroutine: <base href> changes its base as a document is read.
type Rewriter struct {
	// Base is the canonical URL relative references resolve against: the
	// document's URL, then the <base href> of an HTML document.
	Base *url.URL
	// TS is the timestamp (as the reader wrote it) put in rewritten paths.
	TS string
	// Worker marks a script run as a worker's (ModWorker): its
	// location is the worker's own, which JS leaves alone.
	Worker bool

	// identity makes the Rewriter return every reference unchanged (and
	// rename no attribute): tests use it to check that rewriting keeps
	// every byte it does not mean to change.
	identity bool
}

// NewRewriter returns a Rewriter for a document at the canonical URL doc,
// replayed at timestamp ts.
func NewRewriter(doc, ts string) (*Rewriter, error) {
	if page, ok := archive.ScreenshotPage(doc); ok {
		doc = page // an image: nothing to rewrite, but its page's base
	}
	u, err := canon.Parse(doc)
	if err != nil {
		return nil, err
	}
	return &Rewriter{Base: u, TS: ts}, nil
}

// skipSchemes are reference prefixes that are not fetched from the web.
var skipSchemes = []string{"javascript:", "data:", "mailto:", "tel:", "about:", "blob:", "sms:", "urn:", "vbscript:"}

// URL returns the gateway path for the reference ref found in the document,
// keeping its fragment, with modifier mod ("" or e.g. ModIframe). A
// reference that is empty, only a fragment, not http(s), or malformed is
// returned unchanged.
func (rw *Rewriter) URL(ref, mod string) string {
	s := strings.Trim(ref, " \t\n\r\f")
	if s == "" || s[0] == '#' || rw.identity {
		return ref
	}
	low := strings.ToLower(s[:min(len(s), 12)])
	for _, p := range skipSchemes {
		if strings.HasPrefix(low, p) {
			return ref
		}
	}
	frag := ""
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s, frag = s[:i], s[i:]
	}
	abs, err := canon.Resolve(rw.Base, s)
	if err != nil {
		return ref
	}
	return webPath(rw.TS, mod, abs) + frag
}

// SetBase resolves a <base href> value against the current base and makes
// it the base of the rest of the document. Invalid values are ignored.
func (rw *Rewriter) SetBase(href string) {
	abs, err := canon.Resolve(rw.Base, strings.TrimSpace(href))
	if err != nil {
		return
	}
	if u, err := canon.Parse(abs); err == nil {
		rw.Base = u
	}
}

// CSS returns css with the target of every url(), @import and
// image-set() string rewritten (webrefs.CSS finds them). All other bytes
// are kept.
func (rw *Rewriter) CSS(css []byte) []byte {
	var out []byte
	last := 0
	webrefs.CSS(css, func(sp webrefs.Span) {
		if out == nil {
			out = make([]byte, 0, len(css)+256)
		}
		out = append(out, css[last:sp.Start]...)
		out = append(out, rw.URL(string(css[sp.Start:sp.End]), "")...)
		last = sp.End
	})
	if out == nil {
		return css
	}
	return append(out, css[last:]...)
}

// Srcset rewrites each candidate URL of an srcset attribute value, keeping
// separators and descriptors (canon.SrcsetURLs finds the URLs).
func (rw *Rewriter) Srcset(v string) string {
	var b strings.Builder
	last := 0
	for _, sp := range canon.SrcsetURLs(v) {
		b.WriteString(v[last:sp[0]])
		b.WriteString(rw.URL(v[sp[0]:sp[1]], ""))
		last = sp[1]
	}
	b.WriteString(v[last:])
	return b.String()
}

// Refresh rewrites the URL of a Refresh header or <meta http-equiv=refresh>
// content value ("5; url=/next", "0;/next"; webrefs.RefreshURL finds it),
// keeping the rest.
func (rw *Rewriter) Refresh(v string) string {
	sp, ok := webrefs.RefreshURL(v)
	if !ok {
		return v
	}
	return v[:sp.Start] + rw.URL(v[sp.Start:sp.End], "") + v[sp.End:]
}
