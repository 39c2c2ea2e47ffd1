package crawl

import (
	"bytes"
	"net/url"
	"slices"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/canon"
)

// MaxLinks caps the links ExtractLinks returns for one document; the rest
// are ignored. It bounds memory on hostile pages.
const MaxLinks = 10000

// linkAttrs lists, per HTML element, the attributes that hold one URL
// (srcset holds several; see srcsetRefs).
var linkAttrs = map[string][]string{
	"a":      {"href"},
	"area":   {"href"},
	"link":   {"href"},
	"img":    {"src", "srcset"},
	"script": {"src"},
	"iframe": {"src"},
	"frame":  {"src"},
	"embed":  {"src"},
	"source": {"src", "srcset"},
	"video":  {"src", "poster"},
	"audio":  {"src"},
	"track":  {"src"},
	"input":  {"src"},
	"object": {"data"},
	"body":   {"background"},
	"table":  {"background"},
	"td":     {"background"},
}

// ref is a raw reference found in a document. embed marks a page
// requisite: a resource the document loads to display itself
// (stylesheets and what they import, scripts and their static imports,
// images, fonts, icons, media, frames), as opposed to a link the reader
// follows (a, area, most link rels, a meta refresh).
type ref struct {
	s     string
	embed bool
}

// embedRels are the <link rel> values whose target the page loads to
// display itself; a <link> with none of them is navigation (alternate,
// canonical, next, author…).
var embedRels = []string{"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed",
	"mask-icon", "fluid-icon", "preload", "modulepreload", "manifest"}

// isEmbedRel reports whether a <link>'s rel attribute names a requisite.
func isEmbedRel(rel string) bool {
	for _, r := range strings.Fields(strings.ToLower(rel)) {
		if slices.Contains(embedRels, r) {
			return true
		}
	}
	return false
}

// isNavAttr reports whether attribute key of element tag holds a link the
// reader follows rather than a resource the page embeds (<link> is decided
// by its rel: isEmbedRel).
func isNavAttr(tag, key string) bool {
	return (tag == "a" || tag == "area") && key == "href"
}

// ExtractLinks returns the canonical absolute http(s) links of a document
// fetched from base, deduplicated and sorted. HTML (text/html,
// application/xhtml+xml) is read with golang.org/x/net/html (see
// htmlRefs): a, area, link href; img, script, iframe, frame, embed,
// source, video, audio, track, input src; img and source srcset; object
// data; background attributes; url() and @import in style attributes and
// <style> elements; the target of a meta refresh; a <base href> moves the
// resolution base.
// Inline scripts and script files (text/javascript and the like) yield
// what jsRefs finds: static imports and re-exports, string specifiers of
// import(), new URL(…, import.meta.url) and workers, and string literals
// naming a resource of the script's own host by its path.
// CSS (text/css) yields its url() and @import targets. Other types yield
// nothing. Links that do not resolve to a valid http(s) URL are skipped.
// At most MaxLinks links are returned. ExtractLinks never panics, whatever
// the input.
func ExtractLinks(base *url.URL, contentType string, body []byte) []string {
	links, reqs := ExtractRequisites(base, contentType, body)
	out := append(links, reqs...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ExtractRequisites is ExtractLinks split in two: links, the references
// a reader follows (a and area href, <link> of other rels, a meta
// refresh), and reqs, the page requisites the document loads to display
// itself (see ref). A URL both followed and embedded is a requisite only.
// Each list is deduplicated and sorted; together they hold at most
// MaxLinks URLs.
func ExtractRequisites(base *url.URL, contentType string, body []byte) (links, reqs []string) {
	return extractLinks(base, contentType, body, nil, nil)
}

// extractLinks is ExtractRequisites keeping only the links keep and the
// requisites keepReq admit (nil: every one). Each gets the URL both parsed
// and in canonical form and returns the form to keep.
func extractLinks(base *url.URL, contentType string, body []byte, keep, keepReq func(*url.URL, string) (string, bool)) (links, reqs []string) {
	if base == nil {
		return nil, nil
	}
	mt := mediaType(contentType)
	var refs []ref
	switch {
	case isHTML(mt):
		refs, base = htmlRefs(base, body)
	case isCSS(mt):
		refs = cssRefs(body, nil)
	case isJS(mt):
		refs = jsRefs(body, base.Host, false, nil)
	default:
		return nil, nil
	}
	return splitRefs(base, refs, keep, keepReq)
}

// resolveRefs resolves raw references against base and returns the
// canonical http(s) ones that keep admits (all when nil), deduplicated and
// sorted, at most MaxLinks, embedded or not.
func resolveRefs(base *url.URL, refs []ref, keep func(*url.URL, string) (string, bool)) []string {
	links, reqs := splitRefs(base, refs, keep, keep)
	out := append(links, reqs...)
	slices.Sort(out)
	return out
}

// splitRefs resolves raw references against base and returns the
// canonical http(s) links that keep admits and requisites that keepReq
// admits (all when nil), each deduplicated and sorted, at most MaxLinks
// in all. A URL that is a requisite is not also a link.
func splitRefs(base *url.URL, refs []ref, keep, keepReq func(*url.URL, string) (string, bool)) (links, reqs []string) {
	kind := make(map[string]bool, len(refs)) // canonical URL → embedded
	// Requisites first, so that a URL both embedded and followed counts
	// as a requisite and the per-page caps of keepReq see them all.
	for _, embed := range []bool{true, false} {
		k := keep
		if embed {
			k = keepReq
		}
		for _, r := range refs {
			if r.embed != embed {
				continue
			}
			if len(kind) >= MaxLinks {
				break
			}
			s := strings.TrimSpace(r.s)
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			u, c, err := canon.ResolveURL(base, s)
			if err != nil {
				continue
			}
			if _, dup := kind[c]; dup {
				continue
			}
			if k != nil {
				var ok bool
				if c, ok = k(u, c); !ok {
					continue
				}
				if _, dup := kind[c]; dup {
					continue
				}
			}
			kind[c] = embed
			if embed {
				reqs = append(reqs, c)
			} else {
				links = append(links, c)
			}
		}
	}
	slices.Sort(links)
	slices.Sort(reqs)
	return links, reqs
}

// htmlRefs returns the raw references of an HTML document and the base URL
// links resolve against. Most documents are read as a token stream
// (tokenRefs): a link is an attribute of a start tag, the text of a
// <style> element is raw text, and building goquery's tree cost a fifth
// of a crawled page's CPU. A document with SVG or MathML content is parsed
// into goquery's tree instead (treeRefs): there the tree builder changes
// what tokens mean (integration points, breakout tags, CDATA, markup in
// <style>), and following it token by token would mean rewriting it.
// hasForeign decides which, before either runs. TestExtractMatchesGoquery
// and FuzzExtractFindsGoquerysLinks hold the two paths to the same links.
func htmlRefs(base *url.URL, body []byte) ([]ref, *url.URL) {
	if hasForeign(body) {
		return treeRefs(base, body)
	}
	refs, href := tokenRefs(body, base.Host)
	if href != nil {
		base = resolveBase(base, *href)
	}
	return refs, base
}

// hasForeign reports whether body may hold an <svg> or <math> start tag
// (canon.MayHaveTag: a false positive only costs the tree).
func hasForeign(body []byte) bool { return canon.MayHaveTag(body, "svg", "math") }

// tokenRefs returns the raw references of an HTML document without SVG or
// MathML content (hasForeign) and the value of its first <base href>, if
// any, from the token stream; host is the document's (see jsRefs). Where
// the tree builder renames what it reads, this follows it: <image> is an
// <img>.
func tokenRefs(body []byte, host string) (refs []ref, baseHref *string) {
	z := html.NewTokenizer(bytes.NewReader(body))
	inStyle, inScript := false, false
	templates := 0 // open <template> elements: a <base> inside one is inert
	for {
		tt := z.Next()
		wasStyle, wasScript := inStyle, inScript
		inStyle, inScript = false, false
		switch tt {
		case html.ErrorToken:
			return refs, baseHref
		case html.TextToken:
			switch {
			case wasStyle:
				refs = cssRefs(z.Text(), refs)
			case wasScript && templates == 0:
				refs = jsRefs(z.Text(), host, true, refs)
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "template" && templates > 0 {
				templates--
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			tag := string(name) // names of interest are short; the conversion is cheap
			switch tag {
			case "image":
				tag = "img"
			case "style":
				// "<style/>" opens a style element too: the slash means
				// nothing on an HTML element.
				inStyle = true
			case "template":
				templates++
			}
			keys := linkAttrs[tag]
			var equiv, content, rel, typ string
			hasSrc := false
			var linkHref []string // a <link>'s href, classified by its rel at the end of the tag
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				key := string(k)
				switch {
				case key == "style":
					refs = cssRefs(v, refs)
				case key == "srcset" && slices.Contains(keys, "srcset"):
					refs = srcsetRefs(string(v), refs)
				case tag == "link" && key == "href":
					linkHref = append(linkHref, string(v))
				case tag == "link" && key == "rel":
					rel = string(v)
				case tag == "script" && key == "type":
					typ = string(v)
				case slices.Contains(keys, key):
					hasSrc = hasSrc || key == "src"
					refs = append(refs, ref{string(v), !isNavAttr(tag, key)})
				case tag == "base" && key == "href" && baseHref == nil && templates == 0:
					h := string(v)
					baseHref = &h
				case tag == "meta" && key == "http-equiv":
					equiv = string(v)
				case tag == "meta" && key == "content":
					content = string(v)
				}
			}
			// As for <style/>, "<script/>" opens a script element: the
			// tree reads the text after it as the script's.
			inScript = tag == "script" && !hasSrc && isScriptType(typ)
			embed := isEmbedRel(rel)
			for _, h := range linkHref {
				refs = append(refs, ref{h, embed})
			}
			if tag == "meta" && strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
				if r := refreshURL(content); r != "" {
					refs = append(refs, ref{r, false})
				}
			}
		}
	}
}

// treeRefs returns the raw references of an HTML document and the base URL
// links resolve against, from goquery's tree: one walk over the nodes
// collects every reference.
func treeRefs(base *url.URL, body []byte) ([]ref, *url.URL) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil || len(doc.Nodes) == 0 {
		return nil, base
	}
	var refs []ref
	baseSet := false
	host := base.Host // the document's, as tokenRefs has it, whatever <base> says
	for n := doc.Nodes[0]; n != nil; n = nextNode(n) {
		if n.Type != html.ElementNode {
			continue
		}
		keys := linkAttrs[n.Data]
		for _, a := range n.Attr {
			if a.Namespace != "" {
				continue
			}
			switch {
			case a.Key == "style":
				refs = cssRefs([]byte(a.Val), refs)
			case a.Key == "srcset" && slices.Contains(keys, "srcset"):
				refs = srcsetRefs(a.Val, refs)
			case n.Data == "link" && a.Key == "href":
				rel, _ := attr(n, "rel")
				refs = append(refs, ref{a.Val, isEmbedRel(rel)})
			case slices.Contains(keys, a.Key):
				refs = append(refs, ref{a.Val, !isNavAttr(n.Data, a.Key)})
			}
		}
		switch n.Data {
		case "base":
			if href, ok := attr(n, "href"); ok && !baseSet && !inTemplate(n) {
				baseSet = true
				base = resolveBase(base, href)
			}
		case "style":
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					refs = cssRefs([]byte(c.Data), refs)
				}
			}
		case "script":
			typ, _ := attr(n, "type")
			if _, src := attr(n, "src"); !src && isScriptType(typ) && !inTemplate(n) {
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == html.TextNode {
						refs = jsRefs([]byte(c.Data), host, true, refs)
					}
				}
			}
		case "meta":
			if v, _ := attr(n, "http-equiv"); strings.EqualFold(strings.TrimSpace(v), "refresh") {
				c, _ := attr(n, "content")
				if r := refreshURL(c); r != "" {
					refs = append(refs, ref{r, false})
				}
			}
		}
	}
	return refs, base
}

// isScriptType reports whether a <script>'s type attribute makes it
// JavaScript that runs (classic or a module) rather than a data block.
func isScriptType(typ string) bool {
	typ = strings.ToLower(strings.TrimSpace(typ))
	return typ == "" || typ == "module" || isJS(mediaType(typ))
}

// resolveBase returns the base URL a <base href> value sets in a document
// fetched from doc: doc itself when the value does not resolve.
func resolveBase(doc *url.URL, href string) *url.URL {
	b, err := canon.Resolve(doc, href)
	if err != nil {
		return doc
	}
	bu, err := url.Parse(b)
	if err != nil {
		return doc
	}
	return bu
}

// inTemplate reports whether n is inside a <template>, whose contents are
// not part of the document (a <base> there sets nothing).
func inTemplate(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && p.Data == "template" {
			return true
		}
	}
	return false
}

// nextNode returns the node after n in document order, without recursion.
func nextNode(n *html.Node) *html.Node {
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

// attr returns the value of n's attribute key (no namespace).
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// refreshURL returns the target of a meta refresh content value such as
// "5; url='/next'", or "".
func refreshURL(content string) string {
	_, rest, ok := strings.Cut(content, ";")
	if !ok {
		if _, rest, ok = strings.Cut(content, ","); !ok {
			return ""
		}
	}
	rest = strings.TrimSpace(rest)
	if hasPrefixFold(rest, "url") {
		after := strings.TrimSpace(rest[3:])
		if strings.HasPrefix(after, "=") {
			rest = strings.TrimSpace(after[1:])
		}
	}
	if len(rest) >= 1 && (rest[0] == '"' || rest[0] == '\'') {
		rest, _ = cssString(rest)
	}
	return strings.TrimSpace(rest)
}

// srcsetRefs appends to refs the URLs of a srcset attribute (see
// canon.SrcsetURLs: a data: URL's comma does not split it), as requisites.
func srcsetRefs(v string, refs []ref) []ref {
	for _, sp := range canon.SrcsetURLs(v) {
		refs = append(refs, ref{v[sp[0]:sp[1]], true})
	}
	return refs
}

// cssRefs appends to refs the targets of url(...) and @import "..." in CSS
// text, as requisites. It is a scanner, not a parser: comments are
// skipped, escapes are not decoded.
func cssRefs(css []byte, refs []ref) []ref {
	s := string(css)
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return refs
			}
			i += end + 4
		case hasPrefixFold(s[i:], "url("):
			j := i + 4
			r, n := cssURL(s[j:])
			refs = append(refs, ref{r, true})
			i = j + n
		case hasPrefixFold(s[i:], "@import"):
			j := i + len("@import")
			for j < len(s) && isCSSSpace(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '"' || s[j] == '\'') {
				r, n := cssString(s[j:])
				refs = append(refs, ref{r, true})
				j += n
			}
			i = j
		default:
			i++
		}
	}
	return refs
}

// cssURL reads the inside of url( ... ) and returns the reference and the
// bytes consumed, the closing parenthesis included.
func cssURL(s string) (string, int) {
	i := 0
	for i < len(s) && isCSSSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		ref, n := cssString(s[i:])
		i += n
		if end := strings.IndexByte(s[i:], ')'); end >= 0 {
			i += end + 1
		} else {
			i = len(s)
		}
		return ref, i
	}
	end := strings.IndexByte(s[i:], ')')
	if end < 0 {
		return strings.TrimSpace(s[i:]), len(s)
	}
	return strings.TrimSpace(s[i : i+end]), i + end + 1
}

// cssString reads a quoted string starting at s[0] and returns its content
// and the bytes consumed, quotes included.
func cssString(s string) (string, int) {
	q := s[0]
	end := strings.IndexByte(s[1:], q)
	if end < 0 {
		return s[1:], len(s)
	}
	return s[1 : 1+end], end + 2
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func isCSSSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}
