package gateway

import (
	"bytes"
	"html"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/canon"
)

// maxNoscriptDepth bounds the recursion into <noscript> contents, which the
// tokenizer returns as raw text.
const maxNoscriptDepth = 2

// HTML returns doc with the URLs of links and embedded objects rewritten:
// href, src, srcset, action, formaction, background, poster, object data,
// style attributes, <style> blocks, module imports in inline scripts (see
// JS), <meta http-equiv=refresh> and <base href> (which also moves the base
// of later references). When script
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
	if href, ok := firstBase(doc); ok {
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
	rw        *Rewriter
	script    []byte
	scripted  bool // the script is written
	templates int  // open <template> elements
	banner    []byte
	inserted  bool // the banner is written (or must not be: frameset)
	frameset  bool
	out       []byte
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

// rawTextTags are the elements whose content the tokenizer returns as one
// text token, unparsed.
var rawTextTags = map[string]bool{
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
}

func (h *htmlRewriter) run(doc []byte, depth int) {
	z := xhtml.NewTokenizer(bytes.NewReader(doc))
	raw := "" // name of the raw-text element whose text comes next
	for {
		tt := z.Next()
		b := z.Raw()
		switch tt {
		case xhtml.ErrorToken:
			h.out = append(h.out, b...)
			return
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
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
			h.out = append(h.out, h.tag(tag, b)...)
			if tag == "template" {
				h.templates++
			}
			if depth == 0 && tag == "body" && !h.inserted && h.banner != nil {
				h.insertBanner()
			}
			raw = ""
			if tt == xhtml.StartTagToken && rawTextTags[tag] {
				raw = tag
				if tag == "script" && !isScript(scriptType(b)) {
					raw = "data" // a data block (JSON, a template): kept as is
				}
			}
		case xhtml.TextToken:
			switch {
			case raw == "style":
				h.out = append(h.out, h.rw.CSS(b)...)
			case raw == "script" && h.templates == 0:
				h.out = append(h.out, h.rw.JS(b)...)
			case raw == "noscript" && depth < maxNoscriptDepth:
				h.run(b, depth+1)
			case raw != "":
				h.out = append(h.out, b...)
			default:
				if depth == 0 && !h.inserted && h.banner != nil && len(bytes.Trim(b, " \t\r\n\f")) > 0 {
					h.insertBanner()
				}
				h.out = append(h.out, b...)
			}
			raw = ""
		case xhtml.EndTagToken:
			name, _ := z.TagName()
			if string(name) == "template" && h.templates > 0 {
				h.templates--
			}
			if depth == 0 && !h.scripted && h.script != nil {
				switch string(name) {
				case "head", "body", "html":
					// Nothing but head elements so far: the script goes
					// inside the document, not after it.
					h.out = append(h.out, h.script...)
					h.scripted = true
				}
			}
			h.out = append(h.out, b...)
			raw = ""
		default:
			h.out = append(h.out, b...)
			raw = ""
		}
	}
}

// firstBase returns the href of doc's first <base href> that is not inside
// a <template> or raw text (a <noscript> in a browser that runs scripts):
// the document's base URL, which a browser resolves every link of the
// document against, and which the crawler used (crawl.ExtractLinks).
// Later <base> elements are inert.
func firstBase(doc []byte) (string, bool) {
	if !canon.MayHaveTag(doc, "base") { // most documents: no tokenizer pass
		return "", false
	}
	z := xhtml.NewTokenizer(bytes.NewReader(doc))
	templates := 0
	for {
		tt := z.Next()
		switch tt {
		case xhtml.ErrorToken:
			return "", false
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			name, more := z.TagName()
			switch string(name) {
			case "template":
				if tt == xhtml.StartTagToken {
					templates++
				}
			case "base":
				for more && templates == 0 {
					var k, v []byte
					k, v, more = z.TagAttr()
					if string(k) == "href" {
						return string(v), true
					}
				}
			}
		case xhtml.EndTagToken:
			if name, _ := z.TagName(); string(name) == "template" && templates > 0 {
				templates--
			}
		}
	}
}

// scriptType returns the type attribute of the raw <script> start tag b
// ("" when it has none).
func scriptType(b []byte) string {
	for _, a := range scanAttrs(b) {
		if a.first && a.key == "type" {
			return html.UnescapeString(string(b[a.vs:a.ve]))
		}
	}
	return ""
}

func (h *htmlRewriter) insertBanner() {
	h.out = append(h.out, h.banner...)
	h.inserted = true
}

// attr is one attribute of a raw start tag: byte offsets into the tag.
type attr struct {
	key          string // lower case
	ks, ke       int    // the key
	vs, ve       int    // the value, without quotes; vs == ve == ke if none
	quote        byte   // '"', '\'' or 0 (unquoted or no value)
	hasVal       bool
	first        bool // the first attribute with this key: the one browsers use
	newVal       string
	newKey       string
	changed, ren bool
}

// rewriteKind is what the HTML rewriter does with an attribute's value.
type rewriteKind uint8

const (
	rewriteNone      rewriteKind = iota // kept as is
	rewriteURL                          // one URL, into the archive at the page's date (Rewriter.URL)
	rewriteFrameURL                     // a frame's document: rewriteURL with ModIframe
	rewriteSrcset                       // a srcset list of URLs and sizes (Rewriter.Srcset)
	rewriteCSS                          // a style attribute (Rewriter.CSS)
	rewriteRefresh                      // a <meta> content, when its http-equiv is refresh (Rewriter.Refresh)
	rewriteIntegrity                    // renamed data-herod-integrity: a rewritten resource no longer matches its hash
)

// attrKey is an attribute (lower case) of an element; tag "*" stands
// for any element.
type attrKey struct{ tag, attr string }

// attrRewrites says how the rewriter treats each attribute of each
// element: an entry for the element wins over the one for "*"; an
// attribute with neither is kept as is. Only the first occurrence of an
// attribute in a tag is rewritten: it is the one browsers use.
var attrRewrites = map[attrKey]rewriteKind{
	{"*", "href"}:           rewriteURL,
	{"*", "xlink:href"}:     rewriteURL,
	{"*", "src"}:            rewriteURL,
	{"iframe", "src"}:       rewriteFrameURL,
	{"frame", "src"}:        rewriteFrameURL,
	{"*", "srcset"}:         rewriteSrcset,
	{"*", "imagesrcset"}:    rewriteSrcset,
	{"*", "action"}:         rewriteURL,
	{"*", "formaction"}:     rewriteURL,
	{"*", "background"}:     rewriteURL,
	{"*", "poster"}:         rewriteURL,
	{"object", "data"}:      rewriteURL,
	{"*", "style"}:          rewriteCSS,
	{"meta", "content"}:     rewriteRefresh,
	{"link", "integrity"}:   rewriteIntegrity,
	{"script", "integrity"}: rewriteIntegrity,
}

// attrRewrite returns what attrRewrites says of attribute key of
// element tag.
func attrRewrite(tag, key string) rewriteKind {
	if k, ok := attrRewrites[attrKey{tag, key}]; ok {
		return k
	}
	return attrRewrites[attrKey{"*", key}]
}

// tag returns the raw start tag b of element name with its URL-bearing
// attributes (attrRewrites) rewritten; b itself when nothing changes.
func (h *htmlRewriter) tag(name string, b []byte) []byte {
	attrs := scanAttrs(b)
	if len(attrs) == 0 {
		return b
	}
	get := func(k string) (string, bool) {
		for _, a := range attrs {
			if a.first && a.key == k {
				return html.UnescapeString(string(b[a.vs:a.ve])), true
			}
		}
		return "", false
	}
	rw := h.rw
	dirty := false
	for i := range attrs {
		a := &attrs[i]
		if !a.first || !a.hasVal {
			continue
		}
		kind := attrRewrite(name, a.key)
		if kind == rewriteNone {
			continue
		}
		v := html.UnescapeString(string(b[a.vs:a.ve]))
		nv, ok := "", true
		switch kind {
		case rewriteURL:
			nv = rw.URL(v, "")
		case rewriteFrameURL:
			nv = rw.URL(v, ModIframe)
		case rewriteSrcset:
			nv = rw.Srcset(v)
		case rewriteCSS:
			nv = string(rw.CSS([]byte(v)))
		case rewriteRefresh:
			he, _ := get("http-equiv")
			if ok = strings.EqualFold(strings.TrimSpace(he), "refresh"); ok {
				nv = rw.Refresh(v)
			}
		case rewriteIntegrity:
			// The rewritten resource no longer matches its hash: keep
			// the value under a name browsers do not enforce.
			ok = false
			if !rw.identity {
				a.newKey, a.ren, dirty = "data-herod-integrity", true, true
			}
		}
		if ok && nv != v {
			a.newVal, a.changed, dirty = nv, true, true
		}
	}
	if !dirty {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	last := 0
	for _, a := range attrs {
		if a.ren {
			out = append(out, b[last:a.ks]...)
			out = append(out, a.newKey...)
			last = a.ke
		}
		if !a.changed {
			continue
		}
		out = append(out, b[last:a.vs]...)
		q := a.quote
		if q == 0 {
			q = '"'
			out = append(out, q)
		}
		out = appendAttrEscaped(out, a.newVal, q)
		if a.quote == 0 {
			out = append(out, q)
		}
		last = a.ve
	}
	return append(out, b[last:]...)
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

// scanAttrs finds the attributes of the raw start tag b ("<a href=x>") the
// way the HTML tokenizer reads them (WHATWG 13.2.5.32-38).
func scanAttrs(b []byte) []attr {
	n := len(b)
	i := 1
	for i < n && !canon.IsHTMLSpace(b[i]) && b[i] != '/' && b[i] != '>' {
		i++
	}
	var attrs []attr
	seen := map[string]bool{}
	for {
		for i < n && canon.IsHTMLSpace(b[i]) {
			i++
		}
		if i >= n || b[i] == '>' {
			return attrs
		}
		a := attr{ks: i}
		for i < n {
			c := b[i]
			if c == '=' && i == a.ks {
				i++
				continue
			}
			if canon.IsHTMLSpace(c) || c == '/' || c == '>' || c == '=' {
				break
			}
			i++
		}
		a.ke = i
		a.vs, a.ve = i, i
		for i < n && canon.IsHTMLSpace(b[i]) {
			i++
		}
		switch {
		case i < n && b[i] == '/':
			i++
		case i < n && b[i] == '=':
			i++
			for i < n && canon.IsHTMLSpace(b[i]) {
				i++
			}
			switch {
			case i >= n || b[i] == '>':
			case b[i] == '"' || b[i] == '\'':
				a.quote = b[i]
				i++
				a.vs = i
				for i < n && b[i] != a.quote {
					i++
				}
				a.ve, a.hasVal = i, true
				if i < n {
					i++
				} else {
					// Unterminated quote at the end of input: the tag
					// is not complete, leave it alone.
					a.hasVal = false
				}
			default:
				a.vs = i
				for i < n && !canon.IsHTMLSpace(b[i]) && b[i] != '>' {
					i++
				}
				a.ve, a.hasVal = i, true
			}
		}
		if a.ke > a.ks {
			a.key = strings.ToLower(string(b[a.ks:a.ke]))
			a.first = !seen[a.key]
			seen[a.key] = true
			attrs = append(attrs, a)
		}
	}
}
