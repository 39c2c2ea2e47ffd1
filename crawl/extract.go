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

// ExtractLinks returns the canonical absolute http(s) links of a document
// fetched from base, deduplicated and sorted. HTML (text/html,
// application/xhtml+xml) is read with golang.org/x/net/html (see
// htmlRefs): a, area, link href; img, script, iframe, frame, embed,
// source, video, audio, track, input src; img and source srcset; object
// data; background attributes; url() and @import in style attributes and
// <style> elements; the target of a meta refresh; a <base href> moves the
// resolution base.
// CSS (text/css) yields its url() and @import targets. Other types yield
// nothing. Links that do not resolve to a valid http(s) URL are skipped.
// At most MaxLinks links are returned. ExtractLinks never panics, whatever
// the input.
func ExtractLinks(base *url.URL, contentType string, body []byte) []string {
	return extractLinks(base, contentType, body, nil)
}

// extractLinks is ExtractLinks keeping only the links keep admits (nil:
// every link). keep gets each link both parsed and in canonical form and
// returns the form to keep; at most MaxLinks links are kept.
func extractLinks(base *url.URL, contentType string, body []byte, keep func(*url.URL, string) (string, bool)) []string {
	if base == nil {
		return nil
	}
	mt := mediaType(contentType)
	var refs []string
	switch {
	case isHTML(mt):
		refs, base = htmlRefs(base, body)
	case isCSS(mt):
		refs = cssRefs(body, nil)
	default:
		return nil
	}
	return resolveRefs(base, refs, keep)
}

// resolveRefs resolves raw references against base and returns the
// canonical http(s) ones that keep admits (all when nil), deduplicated and
// sorted, at most MaxLinks.
func resolveRefs(base *url.URL, refs []string, keep func(*url.URL, string) (string, bool)) []string {
	seen := make(map[string]struct{}, len(refs))
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		if len(out) >= MaxLinks {
			break
		}
		r = strings.TrimSpace(r)
		if r == "" || strings.HasPrefix(r, "#") {
			continue
		}
		u, c, err := canon.ResolveURL(base, r)
		if err != nil {
			continue
		}
		if keep != nil {
			var ok bool
			if c, ok = keep(u, c); !ok {
				continue
			}
		}
		if _, dup := seen[c]; dup {
			continue
		}
		seen[c] = struct{}{}
		out = append(out, c)
	}
	slices.Sort(out)
	return out
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
func htmlRefs(base *url.URL, body []byte) ([]string, *url.URL) {
	if hasForeign(body) {
		return treeRefs(base, body)
	}
	refs, href := tokenRefs(body)
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
// any, from the token stream. Where the tree builder renames what it
// reads, this follows it: <image> is an <img>.
func tokenRefs(body []byte) (refs []string, baseHref *string) {
	z := html.NewTokenizer(bytes.NewReader(body))
	inStyle := false
	templates := 0 // open <template> elements: a <base> inside one is inert
	for {
		tt := z.Next()
		wasStyle := inStyle
		inStyle = false
		switch tt {
		case html.ErrorToken:
			return refs, baseHref
		case html.TextToken:
			if wasStyle {
				refs = cssRefs(z.Text(), refs)
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
			var equiv, content string
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				key := string(k)
				switch {
				case key == "style":
					refs = cssRefs(v, refs)
				case key == "srcset" && slices.Contains(keys, "srcset"):
					refs = srcsetRefs(string(v), refs)
				case slices.Contains(keys, key):
					refs = append(refs, string(v))
				case tag == "base" && key == "href" && baseHref == nil && templates == 0:
					h := string(v)
					baseHref = &h
				case tag == "meta" && key == "http-equiv":
					equiv = string(v)
				case tag == "meta" && key == "content":
					content = string(v)
				}
			}
			if tag == "meta" && strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
				if r := refreshURL(content); r != "" {
					refs = append(refs, r)
				}
			}
		}
	}
}

// treeRefs returns the raw references of an HTML document and the base URL
// links resolve against, from goquery's tree: one walk over the nodes
// collects every reference.
func treeRefs(base *url.URL, body []byte) ([]string, *url.URL) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil || len(doc.Nodes) == 0 {
		return nil, base
	}
	var refs []string
	baseSet := false
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
			case slices.Contains(keys, a.Key):
				refs = append(refs, a.Val)
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
		case "meta":
			if v, _ := attr(n, "http-equiv"); strings.EqualFold(strings.TrimSpace(v), "refresh") {
				c, _ := attr(n, "content")
				if r := refreshURL(c); r != "" {
					refs = append(refs, r)
				}
			}
		}
	}
	return refs, base
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
// canon.SrcsetURLs: a data: URL's comma does not split it).
func srcsetRefs(v string, refs []string) []string {
	for _, sp := range canon.SrcsetURLs(v) {
		refs = append(refs, v[sp[0]:sp[1]])
	}
	return refs
}

// cssRefs appends to refs the targets of url(...) and @import "..." in CSS
// text. It is a scanner, not a parser: comments are skipped, escapes are
// not decoded.
func cssRefs(css []byte, refs []string) []string {
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
			ref, n := cssURL(s[j:])
			refs = append(refs, ref)
			i = j + n
		case hasPrefixFold(s[i:], "@import"):
			j := i + len("@import")
			for j < len(s) && isCSSSpace(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '"' || s[j] == '\'') {
				ref, n := cssString(s[j:])
				refs = append(refs, ref)
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
