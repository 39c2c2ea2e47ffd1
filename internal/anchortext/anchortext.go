package anchortext

import (
	"bytes"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/herod-archive/herod/internal/canon"
)

// MaxLen bounds an anchor text, in bytes, after normalization: longer
// texts are cut at a rune boundary.
const MaxLen = 256

// maxAnchorScan bounds the text gathered inside one link before it is
// normalized, so a hostile page cannot make one anchor hold its body.
const maxAnchorScan = 4 * MaxLen

// Of returns, for an HTML document fetched from base, the anchor
// text of each link it carries, by canonical URL: the text inside an
// <a href> (with the alt text of images in it), or an <area>'s alt,
// normalized (Normalize). A URL linked more than once keeps its
// first non-empty text. A <base href> moves the resolution base as in a
// browser. Links that do not resolve to an http(s) URL are skipped.
// Of never panics, whatever the input.
func Of(base *url.URL, body []byte) map[string]string {
	out := map[string]string{}
	if base == nil {
		return out
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	baseSet := false
	var open string // canonical URL of the <a> being read, "" outside one
	var text strings.Builder
	closeA := func() {
		if open != "" && out[open] == "" {
			out[open] = Normalize(text.String())
		}
		open = ""
		text.Reset()
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			closeA()
			return out
		case html.TextToken:
			if open != "" && text.Len() < maxAnchorScan {
				text.Write(z.Text())
				text.WriteByte(' ')
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if _, dup := attrs[string(k)]; !dup {
					attrs[string(k)] = string(v)
				}
			}
			switch atom.Lookup(name) {
			case atom.Base:
				if h, ok := attrs["href"]; ok && !baseSet {
					baseSet = true
					if b, err := base.Parse(strings.TrimSpace(h)); err == nil {
						base = b
					}
				}
			case atom.A:
				closeA() // an <a> inside an <a> ends the first, as in a browser
				if c, ok := resolve(base, attrs["href"]); ok {
					open = c
					if _, seen := out[c]; !seen {
						out[c] = ""
					}
				}
			case atom.Area:
				if c, ok := resolve(base, attrs["href"]); ok && out[c] == "" {
					out[c] = Normalize(attrs["alt"])
				}
			case atom.Img:
				if open != "" && text.Len() < maxAnchorScan {
					text.WriteString(attrs["alt"])
					text.WriteByte(' ')
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.A {
				closeA()
			}
		}
	}
}

// resolve returns the canonical http(s) URL href names from base.
func resolve(base *url.URL, href string) (string, bool) {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return "", false
	}
	_, c, err := canon.ResolveURL(base, href)
	if err != nil {
		return "", false
	}
	return c, true
}

// Normalize returns s with runs of white space (and control
// characters) folded to one space, trimmed, invalid UTF-8 replaced, and
// cut to at most MaxLen bytes at a rune boundary.
func Normalize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			if b.Len()+1 > MaxLen {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > MaxLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
