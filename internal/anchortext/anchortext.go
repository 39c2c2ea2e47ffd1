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
	c := NewCollector(base)
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return c.Result()
		}
		c.Take(tt, z)
	}
}

// Tokens is the current token as a Collector reads it, as
// golang.org/x/net/html's Tokenizer gives it: a tag's lower-case name
// and whether it has attributes, its attributes decoded one by one, a
// text token's decoded text. *html.Tokenizer and webrefs' Walker have
// it.
type Tokens interface {
	TagName() (name []byte, hasAttr bool)
	TagAttr() (key, val []byte, moreAttr bool)
	Text() []byte
}

// A Collector gathers what Of returns from a document's tokens, for a
// caller that reads the tokens for more than anchor texts: Take each
// token in order, then Result.
type Collector struct {
	base    *url.URL
	out     map[string]string
	baseSet bool
	open    string // canonical URL of the <a> being read, "" outside one
	text    strings.Builder
}

// NewCollector returns a Collector for a document fetched from base
// (nil: it collects nothing).
func NewCollector(base *url.URL) *Collector {
	return &Collector{base: base, out: map[string]string{}}
}

// closeA ends the <a> being read.
func (c *Collector) closeA() {
	if c.open != "" && c.out[c.open] == "" {
		c.out[c.open] = Normalize(c.text.String())
	}
	c.open = ""
	c.text.Reset()
}

// Take takes the current token, of type tt, from t.
func (c *Collector) Take(tt html.TokenType, t Tokens) {
	if c.base == nil {
		return
	}
	switch tt {
	case html.TextToken:
		if c.open != "" && c.text.Len() < maxAnchorScan {
			c.text.Write(t.Text())
			c.text.WriteByte(' ')
		}
	case html.StartTagToken, html.SelfClosingTagToken:
		name, hasAttr := t.TagName()
		attrs := map[string]string{}
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = t.TagAttr()
			if _, dup := attrs[string(k)]; !dup {
				attrs[string(k)] = string(v)
			}
		}
		switch atom.Lookup(name) {
		case atom.Base:
			if h, ok := attrs["href"]; ok && !c.baseSet {
				c.baseSet = true
				if b, err := c.base.Parse(strings.TrimSpace(h)); err == nil {
					c.base = b
				}
			}
		case atom.A:
			c.closeA() // an <a> inside an <a> ends the first, as in a browser
			if u, ok := resolve(c.base, attrs["href"]); ok {
				c.open = u
				if _, seen := c.out[u]; !seen {
					c.out[u] = ""
				}
			}
		case atom.Area:
			if u, ok := resolve(c.base, attrs["href"]); ok && c.out[u] == "" {
				c.out[u] = Normalize(attrs["alt"])
			}
		case atom.Img:
			if c.open != "" && c.text.Len() < maxAnchorScan {
				c.text.WriteString(attrs["alt"])
				c.text.WriteByte(' ')
			}
		}
	case html.EndTagToken:
		if name, _ := t.TagName(); atom.Lookup(name) == atom.A {
			c.closeA()
		}
	}
}

// Result returns the anchor texts taken, by canonical URL, ending the
// <a> still open; the Collector takes no more tokens after it.
func (c *Collector) Result() map[string]string {
	c.closeA()
	return c.out
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
