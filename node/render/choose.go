package render

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/herod-archive/herod/internal/canon"
)

// Reason says why a page is rendered; "" means it is not.
type Reason string

// The reasons of Chooser.Choose.
const (
	ReasonRule   Reason = "rule"   // a rule's SURT prefix names it
	ReasonHost   Reason = "host"   // its host's first rendered page needed a browser
	ReasonFirst  Reason = "first"  // the first page of its host: rendered to learn the verdict
	ReasonScript Reason = "script" // little text, much script (Weight.ScriptHeavy)
)

// Chooser decides which pages are worth a render (Choose), in this
// order: a rule names the page; its host's verdict says its pages need
// a browser; its host has no verdict yet (the page is rendered to learn
// it, one page of a host at a time); its HTML is script-heavy. Only
// HTML pages are rendered. Safe for concurrent use.
type Chooser struct {
	Rules    *Rules    // nil: no rules
	Verdicts *Verdicts // nil: no per-host verdicts, and no first-page renders
}

// Choose returns why the page at u, answered with header h and body, is
// rendered, or "". A ReasonFirst return has started the host's probe:
// the caller ends it with Learned or Verdicts.Abandon.
func (c *Chooser) Choose(u string, h http.Header, body []byte) Reason {
	if !isHTML(h, body) {
		return ""
	}
	if c.Rules.Match(u) {
		return ReasonRule
	}
	host := hostOf(u)
	if c.Verdicts != nil && host != "" {
		if need, known := c.Verdicts.Need(host); known && need {
			return ReasonHost
		} else if !known && c.Verdicts.Probe(host) {
			return ReasonFirst
		}
	}
	if Measure(body).ScriptHeavy() {
		return ReasonScript
	}
	return ""
}

// Learned records the verdict a render of the first page of u's host
// gives (Needs): plain are the page's links the crawler found in its
// HTML, requisites included; rendered the rendered page's links; fetched
// the URLs its scripts fetched (fetch and XHR answers to GETs).
func (c *Chooser) Learned(u string, plain, rendered, fetched []string) (need bool, err error) {
	need = Needs(u, plain, rendered, fetched)
	if c.Verdicts == nil {
		return need, nil
	}
	return need, c.Verdicts.Learn(hostOf(u), need)
}

// Needs is the verdict rule: a host's pages need a browser when its
// first rendered page links to pages the plain extraction did not find
// (links a script wrote, history routes), or when its scripts fetched a
// URL the plain extraction did not name (content loaded by script).
// What the page's stylesheets and scripts load by themselves (imports,
// fonts, backgrounds) does not count: the crawler reaches it through
// their own extraction. URLs are compared in canonical form.
func Needs(page string, plain, rendered, fetched []string) bool {
	known := map[string]bool{canonOr(page): true}
	for _, l := range plain {
		known[canonOr(l)] = true
	}
	for _, l := range rendered {
		if !known[canonOr(l)] {
			return true
		}
	}
	for _, l := range fetched {
		if !known[canonOr(l)] {
			return true
		}
	}
	return false
}

// isHTML reports whether a page is HTML by its Content-Type (or, with
// none, by its bytes).
func isHTML(h http.Header, body []byte) bool {
	ct := h.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// hostOf returns the lower-case host (and port) of u, "" when it has none.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Host)
}

// canonOr returns u in canonical form, or u when it has none.
func canonOr(u string) string {
	if c, err := canon.Canonical(u); err == nil {
		return c
	}
	return u
}
