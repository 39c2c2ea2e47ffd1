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
	return parseHTML(pageURL, payload, webrefs.ReadsTokens(payload))
}

// parseHTML is ParseHTML, reading a document that webrefs reads as
// tokens once (oneWalk: its references and its text from one Walker),
// any other twice (webrefs.HTML's tree, then the text's tokens).
func parseHTML(pageURL string, payload []byte, oneWalk bool) Page {
	base, err := canon.Parse(pageURL)
	if err != nil {
		base = &url.URL{}
	}
	var tx pageText
	if !oneWalk {
		refs, href, ok := webrefs.HTML(payload, base.Host)
		z := xhtml.NewTokenizer(bytes.NewReader(payload))
		for {
			tt := z.Next()
			if tt == xhtml.ErrorToken {
				break
			}
			var tag string
			if tt == xhtml.StartTagToken || tt == xhtml.SelfClosingTagToken || tt == xhtml.EndTagToken {
				name, _ := z.TagName()
				tag = string(name)
			}
			tx.token(tt, tag, z.Text)
		}
		return tx.page(links(base, refs, href, ok))
	}
	w := webrefs.NewWalker(payload)
	tr := webrefs.TokenRefs{Host: base.Host}
	for w.Next() {
		tr.Add(w) // before Text rewrites the token's bytes
		tx.token(w.Type(), w.Tag(), w.Text)
	}
	return tx.page(links(base, tr.Refs, tr.Base, tr.HasBase))
}

// pageText gathers a page's title and the text a reader sees from its
// tokens.
type pageText struct {
	text, title strings.Builder
	skip        int
	inTitle     bool
}

// token takes a token of type tt: tag is a tag's lower-case name, text
// returns a text token's decoded text.
func (p *pageText) token(tt xhtml.TokenType, tag string, text func() []byte) {
	switch tt {
	case xhtml.TextToken:
		switch {
		case p.inTitle:
			p.title.Write(text())
		case p.skip == 0 && p.text.Len() < maxText:
			p.text.Write(text())
			p.text.WriteByte(' ')
		}
	case xhtml.StartTagToken, xhtml.SelfClosingTagToken, xhtml.EndTagToken:
		if tt == xhtml.EndTagToken {
			if skipText[tag] && p.skip > 0 {
				p.skip--
			}
			if tag == "title" {
				p.inTitle = false
			}
			return
		}
		if skipText[tag] && tt == xhtml.StartTagToken {
			p.skip++
		}
		if tag == "title" && tt == xhtml.StartTagToken {
			p.inTitle = true
		}
	}
}

// page returns the Page of the tokens taken, with links.
func (p *pageText) page(links []string) Page {
	return Page{Title: collapse(p.title.String()), Text: collapse(p.text.String()), Links: links}
}

// links returns the canonical http(s) URLs of an HTML payload's
// references (webrefs.HTML's: refs, and the href of its first <base>
// if hasBase), served at base, sorted, without duplicates.
func links(base *url.URL, refs []webrefs.Ref, href string, hasBase bool) []string {
	if hasBase {
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
