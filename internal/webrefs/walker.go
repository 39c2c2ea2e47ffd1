package webrefs

import (
	"bytes"
	"html"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/herod-archive/herod/internal/canon"
)

// Walker reads an HTML document token by token as browsers tokenize it
// (golang.org/x/net/html), keeping each token's bytes and their offset in
// the document: the bytes of all tokens, in order, are the document. It
// follows what the tokenizer cannot tell alone: which raw-text element a
// text token is the contents of (TextIn) and how many <template>
// elements are open (Templates).
type Walker struct {
	z         *xhtml.Tokenizer
	tt        xhtml.TokenType
	raw       []byte
	off, next int
	tag       string
	name      []byte // the tokenizer's tag name (TagName)
	hasAttr   bool
	attrs     []TagAttr
	scanned   bool
	textIn    string // of the current text token
	nextIn    string // of the next token, when it is text
	templates int
}

// NewWalker returns a Walker at the start of doc.
func NewWalker(doc []byte) *Walker {
	return &Walker{z: xhtml.NewTokenizer(bytes.NewReader(doc))}
}

// Next moves to the next token and reports whether there is one: at the
// end of the document (or where the tokenizer stops) it returns false,
// and Raw holds the bytes left, if any.
func (w *Walker) Next() bool {
	w.tt = w.z.Next()
	w.raw = w.z.Raw()
	w.off = w.next
	w.next += len(w.raw)
	w.tag, w.name, w.hasAttr, w.attrs, w.scanned = "", nil, false, w.attrs[:0], false
	in := w.nextIn
	w.textIn, w.nextIn = "", ""
	switch w.tt {
	case xhtml.ErrorToken:
		return false
	case xhtml.TextToken:
		w.textIn = in
	case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
		w.name, w.hasAttr = w.z.TagName()
		w.tag = string(w.name)
		switch w.tag {
		case "image":
			w.tag = "img" // as the tree builder renames it
		case "template":
			w.templates++
		case "script":
			// "<script/>" opens a script too: the slash means nothing on
			// an HTML element, and the tokenizer reads what follows as
			// the script's text.
			w.nextIn = "data"
			if typ, _ := w.Attr("type"); IsScriptType(typ) {
				if _, src := w.Attr("src"); !src {
					w.nextIn = "script"
				}
			}
		default:
			if rawText[w.tag] {
				w.nextIn = w.tag
			}
		}
	case xhtml.EndTagToken:
		w.name, _ = w.z.TagName()
		w.tag = string(w.name)
		if w.tag == "template" && w.templates > 0 {
			w.templates--
		}
	}
	return true
}

// rawText are the elements other than <script> whose contents the
// tokenizer returns as one text token, unparsed.
var rawText = map[string]bool{
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
	"style": true, "textarea": true, "title": true, "xmp": true,
}

// Type returns the type of the current token.
func (w *Walker) Type() xhtml.TokenType { return w.tt }

// Raw returns the bytes of the current token, valid until the next call
// of Next or of Text.
func (w *Walker) Raw() []byte { return w.raw }

// Text returns the text of the current text token as the tokenizer
// decodes it (golang.org/x/net/html's Text: newlines normalized, and
// character references decoded except in raw text), valid until the next
// call of Next. It rewrites the bytes Raw returned: read those first.
func (w *Walker) Text() []byte {
	if w.tt != xhtml.TextToken {
		return nil
	}
	return w.z.Text()
}

// TagName returns the current tag's name as the tokenizer gives it
// (lower case; an <image> is "image" here, an "img" for Tag) and
// whether it has attributes, valid until the next call of Next:
// golang.org/x/net/html's TagName, for a reader of the tokenizer's
// tokens (anchortext.Tokens).
func (w *Walker) TagName() (name []byte, hasAttr bool) { return w.name, w.hasAttr }

// TagAttr returns the current start tag's next attribute as the
// tokenizer decodes it (golang.org/x/net/html's TagAttr: the key lower
// case, character references decoded) and whether more follow.
func (w *Walker) TagAttr() (key, val []byte, moreAttr bool) { return w.z.TagAttr() }

// Offset returns the offset of the current token in the document.
func (w *Walker) Offset() int { return w.off }

// Tag returns the lower-case name of the current start or end tag (an
// <image> start tag is an img, as browsers have it).
func (w *Walker) Tag() string { return w.tag }

// TextIn returns, for a text token, the raw-text element it is the
// contents of: "style"; "script" for JavaScript that runs (IsScriptType,
// no src); "data" for the text of any other <script>; the name of
// another raw-text element (title, textarea, noscript…); "" for text
// that is markup's.
func (w *Walker) TextIn() string { return w.textIn }

// Templates returns the number of <template> elements open at the
// current token (a <template> start tag counts itself).
func (w *Walker) Templates() int { return w.templates }

// Attrs returns the attributes of the current start tag, with offsets
// into Raw (ScanAttrs), valid until the next call of Next.
func (w *Walker) Attrs() []TagAttr {
	if !w.scanned {
		w.attrs, w.scanned = appendAttrs(w.attrs[:0], w.raw), true
	}
	return w.attrs
}

// Attr returns the value of the current start tag's attribute key (lower
// case), decoded (AttrValue), and whether the tag has it.
func (w *Walker) Attr(key string) (string, bool) {
	for _, a := range w.Attrs() {
		if a.First && a.Key == key {
			return AttrValue(w.raw[a.ValStart:a.ValEnd]), true
		}
	}
	return "", false
}

// TagAttr is one attribute of a raw start tag, by byte offsets into the
// tag.
type TagAttr struct {
	Key              string // lower case
	KeyStart, KeyEnd int
	// ValStart and ValEnd delimit the value, without quotes; both are
	// KeyEnd when there is none.
	ValStart, ValEnd int
	Quote            byte // '"', '\'' or 0 (unquoted or no value)
	HasVal           bool
	First            bool // the first attribute with this key: the one browsers use
}

// ScanAttrs returns the attributes of the raw start tag b ("<a href=x>")
// as the HTML tokenizer reads them (WHATWG 13.2.5.32-38). A quoted value
// that the input ends inside has no value: the tag is not complete.
func ScanAttrs(b []byte) []TagAttr { return appendAttrs(nil, b) }

// appendAttrs appends the attributes of the raw start tag b to attrs.
func appendAttrs(attrs []TagAttr, b []byte) []TagAttr {
	n := len(b)
	i := 1
	for i < n && !canon.IsHTMLSpace(b[i]) && b[i] != '/' && b[i] != '>' {
		i++
	}
	first := len(attrs)
	for {
		for i < n && canon.IsHTMLSpace(b[i]) {
			i++
		}
		if i >= n || b[i] == '>' {
			return attrs
		}
		var a TagAttr
		a, i = scanAttr(b, i)
		if a.KeyEnd > a.KeyStart {
			a.Key = lowerKey(b[a.KeyStart:a.KeyEnd])
			a.First = true
			for _, p := range attrs[first:] {
				if p.Key == a.Key {
					a.First = false
					break
				}
			}
			attrs = append(attrs, a)
		}
	}
}

// scanAttr reads the attribute starting at b[i] and returns it and where
// the next one may start.
func scanAttr(b []byte, i int) (TagAttr, int) {
	n := len(b)
	a := TagAttr{KeyStart: i}
	for i < n {
		c := b[i]
		if c == '=' && i == a.KeyStart {
			i++
			continue
		}
		if canon.IsHTMLSpace(c) || c == '/' || c == '>' || c == '=' {
			break
		}
		i++
	}
	a.KeyEnd = i
	a.ValStart, a.ValEnd = i, i
	for i < n && canon.IsHTMLSpace(b[i]) {
		i++
	}
	switch {
	case i < n && b[i] == '/':
		i++
	case i < n && b[i] == '=':
		i = scanValue(b, i+1, &a)
	}
	return a, i
}

// scanValue reads the value of attribute a, whose "=" ends before b[i],
// into a and returns where the next attribute may start.
func scanValue(b []byte, i int, a *TagAttr) int {
	n := len(b)
	for i < n && canon.IsHTMLSpace(b[i]) {
		i++
	}
	switch {
	case i >= n || b[i] == '>':
	case b[i] == '"' || b[i] == '\'':
		a.Quote = b[i]
		i++
		a.ValStart = i
		for i < n && b[i] != a.Quote {
			i++
		}
		a.ValEnd, a.HasVal = i, i < n
		if i < n {
			i++
		}
	default:
		a.ValStart = i
		for i < n && !canon.IsHTMLSpace(b[i]) && b[i] != '>' {
			i++
		}
		a.ValEnd, a.HasVal = i, true
	}
	return i
}

// lowerKey returns b in lower case, as a string: a common name without
// an allocation.
func lowerKey(b []byte) string {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			return strings.ToLower(string(b))
		}
	}
	if k, ok := commonKeys[string(b)]; ok {
		return k
	}
	return string(b)
}

// commonKeys are attribute names lowerKey returns without allocating:
// the table's and the most frequent others.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"rel", "type", "http-equiv", "class", "id", "alt", "title", "name", "width", "height",
		"charset", "lang", "async", "defer", "crossorigin", "loading", "media", "sizes", "target", "role", "value", "for"} {
		m[k] = k
	}
	for _, a := range table {
		m[a.Name] = a.Name
	}
	return m
}()

// AttrValue decodes the character references of a raw attribute value as
// the tokenizer does in an attribute: a named reference without its ";"
// followed by "=" or a letter or digit is kept as written ("?a=1&not=2"
// keeps its "&not"), so that URLs with such queries stay what they are.
func AttrValue(raw []byte) string {
	if bytes.IndexByte(raw, '&') < 0 {
		return string(raw)
	}
	var b strings.Builder
	s := string(raw)
	for {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		n := 1
		for n < len(s) && isAlnum(s[n]) {
			n++
		}
		switch {
		case n < len(s) && s[1] == '#':
			n = 2
			for n < len(s) && (isAlnum(s[n])) {
				n++
			}
			if n < len(s) && s[n] == ';' {
				n++
			}
			b.WriteString(html.UnescapeString(s[:n]))
		case n < len(s) && s[n] == ';':
			n++
			b.WriteString(html.UnescapeString(s[:n]))
		case n > 1 && (n == len(s) || s[n] != '='):
			// A legacy reference without ";" decodes only when it is
			// the whole name (the next byte is neither "=" nor alphanumeric).
			d := html.UnescapeString(s[:n])
			if strings.IndexFunc(d, func(r rune) bool { return r < 0x80 && isAlnum(byte(r)) }) >= 0 {
				d = s[:n]
			}
			b.WriteString(d)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// FirstBase returns the href of doc's first <base href> outside a
// <template> (and outside raw text such as a <noscript>'s): the
// document's base URL, which a browser resolves all of the document's
// links against, those before it too. Later <base> elements are inert.
func FirstBase(doc []byte) (string, bool) {
	if !canon.MayHaveTag(doc, "base") { // most documents: no tokenizer pass
		return "", false
	}
	w := NewWalker(doc)
	for w.Next() {
		if w.Tag() == "base" && w.Type() != xhtml.EndTagToken && w.Templates() == 0 {
			if href, ok := w.Attr("href"); ok {
				return href, true
			}
		}
	}
	return "", false
}

// RefreshURL returns the span of the URL in a Refresh header or
// <meta http-equiv=refresh> content value such as "5; url='/next'" or
// "0;/next", and whether it has one.
func RefreshURL(content string) (Span, bool) {
	i := strings.IndexByte(content, ';')
	if i < 0 {
		if i = strings.IndexByte(content, ','); i < 0 {
			return Span{}, false
		}
	}
	j := skipSpace(content, i+1)
	if len(content)-j >= 3 && strings.EqualFold(content[j:j+3], "url") {
		if k := skipSpace(content, j+3); k < len(content) && content[k] == '=' {
			j = skipSpace(content, k+1)
		}
	}
	end := len(content)
	if j < len(content) && (content[j] == '"' || content[j] == '\'') {
		if k := strings.IndexByte(content[j+1:], content[j]); k >= 0 {
			end = j + 1 + k
		}
		j++
	}
	j = skipSpace(content, j)
	for end > j && isSpace(content[end-1]) {
		end--
	}
	return Span{j, end}, end > j
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
