package exchange

import (
	"bytes"
	"net/url"
	"slices"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/canon"
)

// maxText bounds the text extracted from one page.
const maxText = 1 << 20

// linkAttrs names, per element, the attribute holding a link it makes.
var linkAttrs = map[string]string{
	"a": "href", "area": "href", "link": "href", "img": "src", "script": "src",
	"iframe": "src", "frame": "src", "embed": "src", "source": "src",
	"video": "src", "audio": "src", "track": "src", "form": "action",
}

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
// at pageURL. Links that are not http(s) or do not canonicalize are left
// out; a <base href> is honoured.
func ParseHTML(pageURL string, payload []byte) Page {
	var p Page
	base, err := canon.Parse(pageURL)
	if err != nil {
		base = &url.URL{}
	}
	z := xhtml.NewTokenizer(bytes.NewReader(payload))
	var text strings.Builder
	var title strings.Builder
	skip, inTitle := 0, false
	seen := make(map[string]bool)
	for {
		tt := z.Next()
		switch tt {
		case xhtml.ErrorToken:
			slices.Sort(p.Links)
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
			name, hasAttr := z.TagName()
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
			want, ok := linkAttrs[tag]
			if tag == "base" {
				want, ok = "href", true
			}
			for ok && hasAttr {
				k, v, more := z.TagAttr()
				hasAttr = more
				if string(k) != want {
					continue
				}
				ref := strings.TrimSpace(string(v))
				if tag == "base" {
					if b, _, err := canon.ResolveURL(base, ref); err == nil {
						base = b
					}
					continue
				}
				if l, err := canon.Resolve(base, ref); err == nil && !seen[l] &&
					(strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")) {
					seen[l] = true
					p.Links = append(p.Links, l)
				}
			}
		}
	}
}

// collapse trims s and replaces each run of white space with one space.
func collapse(s string) string {
	s = strings.Join(strings.Fields(s), " ")
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
