package crawl

import (
	"bytes"
	"net/url"
	"slices"
	"strings"

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
// application/xhtml+xml) is tokenized with golang.org/x/net/html: a, area,
// link href; img, script, iframe, frame, embed, source, video, audio,
// track, input src; img and source srcset; object data; background
// attributes; url() and @import in style attributes and <style> elements;
// the target of a meta refresh; a <base href> moves the resolution base.
// CSS (text/css) yields its url() and @import targets. Other types yield
// nothing. Links that do not resolve to a valid http(s) URL are skipped.
// At most MaxLinks links are returned. ExtractLinks never panics, whatever
// the input.
func ExtractLinks(base *url.URL, contentType string, body []byte) []string {
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
	return resolveRefs(base, refs)
}

// resolveRefs resolves raw references against base and returns the
// canonical http(s) ones, deduplicated and sorted, at most MaxLinks.
func resolveRefs(base *url.URL, refs []string) []string {
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
		c, err := canon.Resolve(base, r)
		if err != nil {
			continue
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
// links resolve against. It reads the token stream of golang.org/x/net/html
// (the tokenizer goquery's parser is built on) without building a tree: a
// link is an attribute of a start tag, the text of a <style> element is
// raw text, and building the tree cost a fifth of a crawled page's CPU.
// Where the tree builder changes what the tokens mean, this follows it:
// <image> outside SVG and MathML is an <img>; in SVG and MathML content,
// which a breakout tag such as <div> or <p> ends, <style> and the like
// hold markup. TestExtractMatchesGoquery checks that both give the same
// links on real pages; FuzzExtractFindsGoquerysLinks that every link the
// tree yields is found here (the converse need not hold: markup the tree
// builder drops, such as a <td> outside a table, still counts here).
func htmlRefs(base *url.URL, body []byte) ([]string, *url.URL) {
	z := html.NewTokenizer(bytes.NewReader(body))
	var refs []string
	var baseHref string
	baseSet, inStyle := false, false
	foreign := 0 // depth of open <svg> and <math> elements
	for {
		tt := z.Next()
		wasStyle := inStyle
		inStyle = false
		switch tt {
		case html.ErrorToken:
			if baseSet {
				if b, err := canon.Resolve(base, baseHref); err == nil {
					if bu, err := url.Parse(b); err == nil {
						base = bu
					}
				}
			}
			return refs, base
		case html.TextToken:
			if wasStyle {
				refs = cssRefs(z.Text(), refs)
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); foreign > 0 && (string(name) == "svg" || string(name) == "math") {
				foreign--
				z.AllowCDATA(foreign > 0)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			tag := string(name) // names of interest are short; the conversion is cheap
			switch {
			case tag == "svg" || tag == "math":
				if tt == html.StartTagToken {
					foreign++
				}
			case foreign > 0 && breakout[tag]:
				foreign = 0
			case tag == "image" && foreign == 0:
				tag = "img"
			}
			if foreign > 0 {
				// In SVG and MathML, <style>, <title> and the like hold
				// markup, not raw text.
				z.NextIsNotRawText()
			}
			// "<style/>" opens a style element in HTML (the slash means
			// nothing there); in foreign content it is empty.
			inStyle = tag == "style" && (tt == html.StartTagToken || foreign == 0)
			z.AllowCDATA(foreign > 0)
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
					refs = append(refs, srcsetRefs(string(v))...)
				case slices.Contains(keys, key):
					refs = append(refs, string(v))
				case tag == "base" && key == "href" && !baseSet:
					baseSet, baseHref = true, string(v)
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

// breakout lists the start tags that end SVG and MathML content: the tree
// builder closes the foreign elements and treats the tag as HTML (HTML
// Living Standard, "parsing main inforeign").
var breakout = map[string]bool{
	"b": true, "big": true, "blockquote": true, "body": true, "br": true, "center": true,
	"code": true, "dd": true, "div": true, "dl": true, "dt": true, "em": true, "embed": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "head": true,
	"hr": true, "i": true, "img": true, "li": true, "listing": true, "menu": true, "meta": true,
	"nobr": true, "ol": true, "p": true, "pre": true, "ruby": true, "s": true, "small": true,
	"span": true, "strong": true, "strike": true, "sub": true, "sup": true, "table": true,
	"tt": true, "u": true, "ul": true, "var": true,
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

// srcsetRefs returns the URLs of a srcset attribute: comma-separated
// candidates, each a URL followed by an optional descriptor.
func srcsetRefs(v string) []string {
	var out []string
	for _, cand := range strings.Split(v, ",") {
		if f := strings.Fields(cand); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
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
