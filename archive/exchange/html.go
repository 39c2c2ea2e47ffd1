package exchange

import (
	"bytes"
	"net/url"
	"slices"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/webrefs"
)

// maxText bounds the text extracted from one page.
const maxText = 1 << 20

// skipText are the elements whose content is not text a reader sees.
var skipText = map[string]bool{"script": true, "style": true, "noscript": true, "template": true, "head": true}

// Page is what an HTML payload says about itself.
type Page struct {
	Title string
	Text  string   // visible text, whitespace collapsed, at most maxText bytes
	Links []string // canonical absolute links, sorted, without duplicates
}

// IsHTML reports whether a media type is an HTML document.
func IsHTML(mediaType string) bool {
	return mediaType == "text/html" || mediaType == "application/xhtml+xml"
}

// ParseHTML extracts the title, text and links of an HTML payload served
// at pageURL. The links are every URL internal/webrefs finds in the page
// (webrefs.HTML: the attribute table's attributes, whether the browser
// loads them, the reader follows them or neither, such as a form's
// action; CSS; inline scripts), resolved against the page's first
// <base href>; those that are not http(s) or do not canonicalize are
// left out.
func ParseHTML(pageURL string, payload []byte) Page {
	var p Page
	base, err := canon.Parse(pageURL)
	if err != nil {
		base = &url.URL{}
	}
	p.Links = links(base, payload)
	z := xhtml.NewTokenizer(bytes.NewReader(payload))
	var text strings.Builder
	var title strings.Builder
	skip, inTitle := 0, false
	for {
		tt := z.Next()
		switch tt {
		case xhtml.ErrorToken:
			p.Title = collapse(title.String())
			p.Text = collapse(text.String())
			return p
		case xhtml.TextToken:
			switch {
			case inTitle:
				title.Write(z.Text())
			case skip == 0 && text.Len() < maxText:
				text.Write(z.Text())
				text.WriteByte(' ')
			}
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken, xhtml.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if tt == xhtml.EndTagToken {
				if skipText[tag] && skip > 0 {
					skip--
				}
				if tag == "title" {
					inTitle = false
				}
				continue
			}
			if skipText[tag] && tt == xhtml.StartTagToken {
				skip++
			}
			if tag == "title" && tt == xhtml.StartTagToken {
				inTitle = true
			}
		}
	}
}

// links returns the canonical http(s) URLs of the references of an HTML
// payload served at base, sorted, without duplicates.
func links(base *url.URL, payload []byte) []string {
	refs, href, ok := webrefs.HTML(payload, base.Host)
	if ok {
		if b, _, err := canon.ResolveURL(base, strings.TrimSpace(href)); err == nil {
			base = b
		}
	}
	var out []string
	for _, r := range refs {
		ref := strings.TrimSpace(r.URL)
		if ref == "" || ref[0] == '#' {
			continue
		}
		if l, err := canon.Resolve(base, ref); err == nil &&
			(strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// collapse trims s and replaces each run of white space with one space,
// into one buffer: strings.Fields' slice of every word of a page's text
// was a tenth of what a revisit day allocated at a million URLs.
func collapse(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for w := range strings.FieldsSeq(s) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	s = b.String()
	if len(s) > maxText {
		s = strings.ToValidUTF8(s[:maxText], "")
	}
	return s
}

// Title returns the <title> of an HTML payload, reading no further than
// the title's end or the start of the body: pages.jsonl needs no more.
func Title(payload []byte) string {
	z := xhtml.NewTokenizer(bytes.NewReader(payload))
	var title strings.Builder
	in := false
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			return collapse(title.String())
		case xhtml.TextToken:
			if in {
				title.Write(z.Text())
			}
		case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "title":
				if in {
					return collapse(title.String())
				}
				in = true
			case "body":
				return collapse(title.String())
			}
		}
	}
}
