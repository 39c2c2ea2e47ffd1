package webrefs

import (
	"bytes"
	"iter"
	"slices"
	"strings"

	"github.com/PuerkitoBio/goquery"
	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/canon"
)

// Ref is a reference found in a document, as written (character
// references decoded, not resolved), and what the browser does with it:
// Embed (a page requisite), Follow (a link) or Unfetched.
type Ref struct {
	URL string
	Use Use
}

// HTML returns the references of an HTML document, in document order,
// and the href of its first <base> outside a template, if any; host is
// the document's (with port), which JSRefs needs. It reads every
// attribute the table names (Lookup; a <link href> is Embed or Follow by
// its rel, a meta content only under http-equiv=refresh), the CSS of
// style attributes and <style> elements (CSSRefs) and the scripts that
// run outside templates (JSRefs, inline). Most documents are read as
// tokens (Walker); one with SVG or MathML content (canon.MayHaveTag) is
// parsed into a tree instead, since there the tree builder changes what
// tokens mean (integration points, breakout tags, CDATA, markup in
// <style>). HTML never panics, whatever the input.
func HTML(doc []byte, host string) (refs []Ref, base string, hasBase bool) {
	if !ReadsTokens(doc) {
		return treeRefs(doc, host)
	}
	return tokenRefs(doc, host)
}

// ReadsTokens reports whether HTML reads doc as tokens (a Walker whose
// tokens a TokenRefs takes), not as a tree: true unless doc may have
// SVG or MathML content (canon.MayHaveTag).
func ReadsTokens(doc []byte) bool { return !canon.MayHaveTag(doc, "svg", "math") }

// tokenRefs is HTML for a document read as tokens.
func tokenRefs(doc []byte, host string) (refs []Ref, base string, hasBase bool) {
	w := NewWalker(doc)
	tr := TokenRefs{Host: host}
	for w.Next() {
		tr.Add(w)
	}
	return tr.Refs, tr.Base, tr.HasBase
}

// TokenRefs collects what HTML returns of a document it reads as tokens
// (ReadsTokens), from the tokens of a Walker over it, so that a caller
// that reads the tokens for more than references walks the document
// once: Add each token, in order, before Text reads it.
type TokenRefs struct {
	Host    string // the document's, with port (JSRefs)
	Refs    []Ref  // in document order
	Base    string // the href of the first <base> outside a template
	HasBase bool
}

// Add takes the references of the Walker's current token.
func (tr *TokenRefs) Add(w *Walker) {
	switch w.Type() {
	case xhtml.TextToken:
		switch {
		case w.TextIn() == "style":
			tr.Refs = CSSRefs(w.Raw(), tr.Refs)
		case w.TextIn() == "script" && w.Templates() == 0:
			tr.Refs = JSRefs(w.Raw(), tr.Host, true, tr.Refs)
		}
	case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
		tr.Refs = tagRefs(w.Tag(), walkerAttrs(w), w.Attr, tr.Refs)
		if w.Tag() == "base" && !tr.HasBase && w.Templates() == 0 {
			tr.Base, tr.HasBase = w.Attr("href")
		}
	}
}

// tagRefs appends the references of the start tag of element tag to
// refs: attrs yields its attributes (first occurrences, decoded), attr
// returns one by name. A <base> has none: its href is the base HTML
// returns.
func tagRefs(tag string, attrs iter.Seq2[string, string], attr func(string) (string, bool), refs []Ref) []Ref {
	if tag == "base" {
		return refs
	}
	for name, v := range attrs {
		a := Lookup(tag, name)
		switch a.Kind {
		case URL, FrameURL:
			use := a.Use
			if use == ByRel {
				use = Follow
				if rel, _ := attr("rel"); EmbedRel(rel) {
					use = Embed
				}
			}
			refs = append(refs, Ref{v, use})
		case Srcset:
			for _, sp := range canon.SrcsetURLs(v) {
				refs = append(refs, Ref{v[sp[0]:sp[1]], a.Use})
			}
		case Style:
			refs = CSSRefs([]byte(v), refs)
		case Refresh:
			if he, _ := attr("http-equiv"); strings.EqualFold(strings.TrimSpace(he), "refresh") {
				if sp, ok := RefreshURL(v); ok {
					refs = append(refs, Ref{v[sp.Start:sp.End], a.Use})
				}
			}
		}
	}
	return refs
}

// names are the attribute names of the table: an attribute named
// otherwise holds no URL whatever its element.
var names = func() map[string]bool {
	m := map[string]bool{}
	for _, a := range table {
		m[a.Name] = true
	}
	return m
}()

// walkerAttrs yields the attributes of w's start tag that the table
// names, first occurrences with a value, decoded.
func walkerAttrs(w *Walker) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		raw := w.Raw()
		for _, a := range w.Attrs() {
			if a.First && a.HasVal && names[a.Key] && !yield(a.Key, AttrValue(raw[a.ValStart:a.ValEnd])) {
				return
			}
		}
	}
}

// nodeAttrs yields the attributes of n that the table names (no
// namespace).
func nodeAttrs(n *xhtml.Node) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, a := range n.Attr {
			if a.Namespace == "" && names[a.Key] && !yield(a.Key, a.Val) {
				return
			}
		}
	}
}

// treeRefs is HTML for a document parsed into goquery's tree: one walk
// over the nodes collects every reference.
func treeRefs(doc []byte, host string) (refs []Ref, base string, hasBase bool) {
	d, err := goquery.NewDocumentFromReader(bytes.NewReader(doc))
	if err != nil || len(d.Nodes) == 0 {
		return nil, "", false
	}
	for n := d.Nodes[0]; n != nil; n = nextNode(n) {
		if n.Type != xhtml.ElementNode {
			continue
		}
		attr := func(k string) (string, bool) { return nodeAttr(n, k) }
		refs = tagRefs(n.Data, nodeAttrs(n), attr, refs)
		switch n.Data {
		case "base":
			if href, ok := attr("href"); ok && !hasBase && !inTemplate(n) {
				base, hasBase = href, true
			}
		case "style":
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == xhtml.TextNode {
					refs = CSSRefs([]byte(c.Data), refs)
				}
			}
		case "script":
			typ, _ := attr("type")
			if _, src := attr("src"); !src && IsScriptType(typ) && !inTemplate(n) {
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == xhtml.TextNode {
						refs = JSRefs([]byte(c.Data), host, true, refs)
					}
				}
			}
		}
	}
	return refs, base, hasBase
}

// inTemplate reports whether n is inside a <template>, whose contents are
// not part of the document (a <base> there sets nothing).
func inTemplate(n *xhtml.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == xhtml.ElementNode && p.Data == "template" {
			return true
		}
	}
	return false
}

// nextNode returns the node after n in document order, without recursion.
func nextNode(n *xhtml.Node) *xhtml.Node {
	if n.FirstChild != nil {
		return n.FirstChild
	}
	for ; n != nil; n = n.Parent {
		if n.NextSibling != nil {
			return n.NextSibling
		}
	}
	return nil
}

// nodeAttr returns the value of n's attribute key (no namespace).
func nodeAttr(n *xhtml.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// CSSRefs appends the URLs of CSS text (CSS) to refs, as requisites.
func CSSRefs(css []byte, refs []Ref) []Ref {
	CSS(css, func(sp Span) {
		refs = append(refs, Ref{string(css[sp.Start:sp.End]), Embed})
	})
	return refs
}

// maxJSLiterals caps the literals JSRefs takes from one script: a script
// full of paths (a bundle's route table, a sprite list) adds at most this
// many requisites.
const maxJSLiterals = 64

// JSRefs appends to refs, as requisites, what a script visibly loads
// (ScanJS): its static imports and re-exports, the string specifiers of
// import(), new URL("…", import.meta.url), new Worker, new SharedWorker
// and importScripts, when they are URLs or paths (IsURLSpecifier, not a
// bare package name), and at most maxJSLiterals literals that name a
// resource of the script's own host by its path (IsResourcePath). host is
// the host (with port) of the URL the script came from; inline tells a
// page's <script>, whose relative URLs resolve as the page's links do,
// from a script file, whose relative strings other than imports and
// new URL(…, import.meta.url) resolve against the page that runs it,
// which is not known here (those are left out).
func JSRefs(js []byte, host string, inline bool, refs []Ref) []Ref {
	literals := 0
	ScanJS(js, func(r JSRef) {
		if r.Span.Start < 0 {
			return
		}
		s := string(js[r.Span.Start:r.Span.End])
		switch r.Kind {
		case Literal:
			if literals < maxJSLiterals && IsResourcePath(s, host, inline) {
				literals++
				refs = append(refs, Ref{s, Embed})
			}
		case WorkerURL:
			if IsURLSpecifier(s) && (inline || !strings.HasPrefix(s, "./") && !strings.HasPrefix(s, "../")) {
				refs = append(refs, Ref{s, Embed})
			}
		default:
			if IsURLSpecifier(s) {
				refs = append(refs, Ref{s, Embed})
			}
		}
	})
	return refs
}

// IsURLSpecifier reports whether a module specifier is a URL or a path
// relative to the script rather than a bare package name.
func IsURLSpecifier(spec string) bool {
	for _, p := range []string{"/", "./", "../", "http://", "https://"} {
		if strings.HasPrefix(spec, p) {
			return true
		}
	}
	return false
}

// resourceExts are the file extensions that make a literal of a script a
// resource's path: images, styles, scripts, fonts, media, JSON and
// WebAssembly — what a script builds into the page or fetches — not
// pages, which are links rather than requisites.
var resourceExts = []string{".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico", ".bmp",
	".css", ".js", ".mjs", ".woff", ".woff2", ".ttf", ".otf", ".eot",
	".mp4", ".webm", ".ogg", ".mp3", ".wav", ".json", ".wasm"}

// IsResourcePath reports whether lit, a literal of a script, names a
// resource of host: a path that starts with "/" (not "//"), or an
// http(s) URL of host, whose path ends in one of resourceExts, with any
// query; in a page's inline script, also a "./" or "../" path. These are
// the URLs scripts assign to img.src or write into innerHTML.
func IsResourcePath(lit, host string, inline bool) bool {
	var path string
	switch {
	case strings.HasPrefix(lit, "//"):
		return false
	case strings.HasPrefix(lit, "/"), inline && (strings.HasPrefix(lit, "./") || strings.HasPrefix(lit, "../")):
		path = lit
	case strings.HasPrefix(lit, "http://"), strings.HasPrefix(lit, "https://"):
		_, rest, _ := strings.Cut(lit, "//")
		h, p, ok := strings.Cut(rest, "/")
		if !ok || host == "" || !strings.EqualFold(h, host) {
			return false
		}
		path = "/" + p
	default:
		return false
	}
	if k := strings.IndexAny(path, "?#"); k >= 0 {
		path = path[:k]
	}
	dot := strings.LastIndexByte(path, '.')
	if dot < 0 || strings.IndexByte(path[dot:], '/') >= 0 {
		return false
	}
	return slices.Contains(resourceExts, strings.ToLower(path[dot:]))
}
