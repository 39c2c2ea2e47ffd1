package render

import (
	"bytes"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Thresholds of ScriptHeavy.
const (
	// MinText is the visible text, in bytes, under which a page with a
	// script counts as built by its script: a shell whose content a
	// script writes.
	MinText = 1024
	// TextPerScript is the ratio of visible text to inline script bytes
	// under which a page counts as script-heavy whatever its text.
	TextPerScript = 0.5
	// maxMeasured bounds the bytes of HTML Measure reads.
	maxMeasured = 4 << 20
)

// Weight is what Measure finds in a page's HTML.
type Weight struct {
	Text    int // visible text, whitespace runs counted as one byte
	Inline  int // bytes of inline scripts
	Scripts int // <script> elements, inline or with src
}

// Measure reads an HTML page (its first 4 MiB): the visible text of its
// body (outside script, style, noscript, template and the head), the
// bytes of its inline scripts and the number of its scripts. Scripts of
// a type that does not run (JSON data, templates) are not counted.
func Measure(body []byte) Weight {
	if len(body) > maxMeasured {
		body = body[:maxMeasured]
	}
	var w Weight
	z := html.NewTokenizer(bytes.NewReader(body))
	hidden := 0 // depth inside elements whose text is not shown
	inScript := false
	space := true // the last text byte counted was a space
	for {
		switch z.Next() {
		case html.ErrorToken:
			return w
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			switch a {
			case atom.Script:
				runs, src := scriptAttrs(z, hasAttr)
				if runs {
					w.Scripts++
				}
				inScript = runs && !src
				hidden++
			case atom.Style, atom.Noscript, atom.Template, atom.Head, atom.Title:
				hidden++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch atom.Lookup(name) {
			case atom.Script:
				inScript = false
				hidden = max(hidden-1, 0)
			case atom.Style, atom.Noscript, atom.Template, atom.Head, atom.Title:
				hidden = max(hidden-1, 0)
			}
		case html.TextToken:
			t := z.Text()
			if inScript {
				w.Inline += len(bytes.TrimSpace(t))
				continue
			}
			if hidden > 0 {
				continue
			}
			for _, r := range string(t) {
				if unicode.IsSpace(r) {
					if !space {
						w.Text++
						space = true
					}
					continue
				}
				w.Text++
				space = false
			}
		}
	}
}

// scriptAttrs reads a script tag's attributes: whether it runs (no type,
// a JavaScript type or module) and whether it has a src.
func scriptAttrs(z *html.Tokenizer, more bool) (runs, src bool) {
	runs = true
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "src":
			src = len(bytes.TrimSpace(v)) > 0
		case "type":
			t := strings.ToLower(strings.TrimSpace(string(v)))
			runs = t == "" || t == "module" || strings.Contains(t, "javascript") || strings.Contains(t, "ecmascript")
		}
	}
	return runs, src
}

// ScriptHeavy reports whether a page of weight w is built by its
// scripts rather than carried by its HTML: it has a script, and its
// visible text is under MinText bytes or under TextPerScript of its
// inline script bytes.
func (w Weight) ScriptHeavy() bool {
	if w.Scripts == 0 {
		return false
	}
	return w.Text < MinText || float64(w.Text) < TextPerScript*float64(w.Inline)
}
