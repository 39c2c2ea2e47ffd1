package gateway

import (
	"bytes"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/webrefs"
)

// maxNoscriptDepth bounds the recursion into <noscript> contents, which the
// tokenizer returns as raw text.
const maxNoscriptDepth = 2

// HTML returns doc with the URLs the attribute table of internal/webrefs
// names rewritten (href, src, srcset, action, formaction, background,
// poster, object data, style attributes, <meta http-equiv=refresh>,
// <base href>, integrity renamed…), and those of <style> blocks and of
// module imports in inline scripts that run (see CSS and JS); the first
// <base href> moves the base of all references. When script
// is non-nil it is inserted before the first element that can run a script
// (the first start tag other than html, head, meta, title, base, link and
// style), or before the first </head>, </body> or </html> when that comes
// first, or at the end when there is none of them. When banner is non-nil it is
// inserted right after the <body> start tag (or, without one, before the
// first element or text that belongs to the body). Every byte that is not
// part of a rewritten attribute value is kept, so a document with nothing
// to rewrite comes back unchanged. Malformed HTML is handled like browsers
// tokenize it; HTML never fails.
func (rw *Rewriter) HTML(doc, script, banner []byte) []byte {
	out := make([]byte, 0, len(doc)+len(script)+len(banner)+len(doc)/8)
	h := htmlRewriter{rw: rw, script: script, banner: banner, out: out}
	if href, ok := webrefs.FirstBase(doc); ok {
		// The document's base applies to all of its links, those before
		// the <base> element too.
		rw.SetBase(href)
	}
	h.run(doc, 0)
	if h.script != nil && !h.scripted {
		h.out = append(h.out, h.script...)
	}
	if !h.inserted && h.banner != nil && !h.frameset {
		h.out = append(h.out, h.banner...)
	}
	return h.out
}

type htmlRewriter struct {
	rw       *Rewriter
	script   []byte
	scripted bool // the script is written
	banner   []byte
	inserted bool // the banner is written (or must not be: frameset)
	frameset bool
	out      []byte
}

// headTags are elements that may come before the body without starting it.
var headTags = map[string]bool{
	"html": true, "head": true, "title": true, "meta": true, "link": true,
	"style": true, "script": true, "base": true, "noscript": true, "template": true,
}

// prelude reports whether the script may come after element tag: a head
// element that neither runs a script nor holds one.
func prelude(tag string) bool {
	return headTags[tag] && tag != "script" && tag != "noscript" && tag != "template"
}

// run writes doc, rewritten, to h.out; depth counts the <noscript>
// elements doc is the contents of.
func (h *htmlRewriter) run(doc []byte, depth int) {
	w := webrefs.NewWalker(doc)
	for w.Next() {
		b := w.Raw()
		switch w.Type() {
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			h.startTag(w, depth)
		case xhtml.TextToken:
			h.text(w, depth)
		case xhtml.EndTagToken:
			if depth == 0 && !h.scripted && h.script != nil {
				switch w.Tag() {
				case "head", "body", "html":
					// Nothing but head elements so far: the script goes
					// inside the document, not after it.
					h.out = append(h.out, h.script...)
					h.scripted = true
				}
			}
			h.out = append(h.out, b...)
		default:
			h.out = append(h.out, b...)
		}
	}
	h.out = append(h.out, w.Raw()...)
}

// startTag writes the start tag w is at, rewritten, with the script or
// the banner before or after it where they go.
func (h *htmlRewriter) startTag(w *webrefs.Walker, depth int) {
	tag := w.Tag()
	if depth == 0 && !h.scripted && h.script != nil && !prelude(tag) {
		h.out = append(h.out, h.script...)
		h.scripted = true
	}
	if depth == 0 && !h.inserted && h.banner != nil {
		switch {
		case tag == "frameset":
			h.inserted, h.frameset = true, true
		case tag != "body" && !headTags[tag]:
			h.insertBanner()
		}
	}
	h.out = append(h.out, h.tag(tag, w.Raw(), w.Attrs())...)
	if depth == 0 && tag == "body" && !h.inserted && h.banner != nil {
		h.insertBanner()
	}
}

// text writes the text token w is at: the CSS of a <style> and the
// script of a <script> that runs outside a template rewritten, the
// contents of a <noscript> rewritten as markup, other text as it is.
func (h *htmlRewriter) text(w *webrefs.Walker, depth int) {
	b := w.Raw()
	switch in := w.TextIn(); {
	case in == "style":
		h.out = append(h.out, h.rw.CSS(b)...)
	case in == "script" && w.Templates() == 0:
		h.out = append(h.out, h.rw.JS(b)...)
	case in == "noscript" && depth < maxNoscriptDepth:
		h.run(b, depth+1)
	case in != "":
		h.out = append(h.out, b...)
	default:
		if depth == 0 && !h.inserted && h.banner != nil && len(bytes.Trim(b, " \t\r\n\f")) > 0 {
			h.insertBanner()
		}
		h.out = append(h.out, b...)
	}
}

func (h *htmlRewriter) insertBanner() {
	h.out = append(h.out, h.banner...)
	h.inserted = true
}

// edit is a change to one attribute of a start tag: a new value, a new
// name, or both.
type edit struct {
	webrefs.TagAttr
	newVal, newKey string
	changed, ren   bool
}

// tag returns the raw start tag b of element name, whose attributes are
// attrs, with the attributes the table names (webrefs.Lookup) rewritten;
// b itself when nothing changes.
func (h *htmlRewriter) tag(name string, b []byte, attrs []webrefs.TagAttr) []byte {
	var edits []edit
	for _, a := range attrs {
		if !a.First || !a.HasVal {
			continue
		}
		kind := webrefs.Lookup(name, a.Key).Kind
		if kind == webrefs.None {
			continue
		}
		if e, ok := h.rewriteAttr(name, b, attrs, a, kind); ok {
			edits = append(edits, e)
		}
	}
	if len(edits) == 0 {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	last := 0
	for _, e := range edits {
		if e.ren {
			out = append(out, b[last:e.KeyStart]...)
			out = append(out, e.newKey...)
			last = e.KeyEnd
		}
		if !e.changed {
			continue
		}
		out = append(out, b[last:e.ValStart]...)
		q := e.Quote
		if q == 0 {
			q = '"'
			out = append(out, q)
		}
		out = appendAttrEscaped(out, e.newVal, q)
		if e.Quote == 0 {
			out = append(out, q)
		}
		last = e.ValEnd
	}
	return append(out, b[last:]...)
}

// rewriteAttr returns the edit of attribute a, of the given kind, of the
// start tag b of element name, and whether there is one.
func (h *htmlRewriter) rewriteAttr(name string, b []byte, attrs []webrefs.TagAttr, a webrefs.TagAttr, kind webrefs.Kind) (edit, bool) {
	rw := h.rw
	e := edit{TagAttr: a}
	v := webrefs.AttrValue(b[a.ValStart:a.ValEnd])
	var nv string
	switch kind {
	case webrefs.URL:
		nv = rw.URL(v, "")
	case webrefs.FrameURL:
		nv = rw.URL(v, ModIframe)
	case webrefs.Srcset:
		nv = rw.Srcset(v)
	case webrefs.Style:
		nv = string(rw.CSS([]byte(v)))
	case webrefs.Refresh:
		if !isRefresh(b, attrs) {
			return e, false
		}
		nv = rw.Refresh(v)
	case webrefs.Integrity:
		// The rewritten resource no longer matches its hash: keep the
		// value under a name browsers do not enforce.
		if rw.identity {
			return e, false
		}
		e.newKey, e.ren = "data-herod-integrity", true
		return e, true
	}
	if nv == v {
		return e, false
	}
	e.newVal, e.changed = nv, true
	return e, true
}

// isRefresh reports whether the start tag b, whose attributes are
// attrs, has http-equiv=refresh.
func isRefresh(b []byte, attrs []webrefs.TagAttr) bool {
	for _, a := range attrs {
		if a.First && a.Key == "http-equiv" {
			return strings.EqualFold(strings.TrimSpace(webrefs.AttrValue(b[a.ValStart:a.ValEnd])), "refresh")
		}
	}
	return false
}

// appendAttrEscaped appends v escaped for an attribute value quoted with q:
// only "&" and the quote itself need escaping there, so other characters of
// the original value (such as the other quote) keep their bytes.
func appendAttrEscaped(out []byte, v string, q byte) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '&':
			out = append(out, "&amp;"...)
		case c == q && q == '"':
			out = append(out, "&quot;"...)
		case c == q:
			out = append(out, "&#39;"...)
		default:
			out = append(out, c)
		}
	}
	return out
}
