package webrefs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedFiles adds the files of testdata matching pattern to f.
func seedFiles(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzWalker: the bytes of the tokens, in order, are the document, each
// token's offset is where its bytes are, and every attribute span lies
// inside its tag.
func FuzzWalker(f *testing.F) {
	seedFiles(f, "*.html")
	for _, s := range []string{`<a href="x" href=y =z/>`, `<script/>x</script><style/>`, `<template><base href=a></template>`,
		`<a href="x`, `<p a='1'b="2"c=3 d>`, "<!-- x", "<img\x00src=1>"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		w := NewWalker(doc)
		var got []byte
		for w.Next() {
			if w.Offset() != len(got) || !bytes.Equal(doc[w.Offset():w.Offset()+len(w.Raw())], w.Raw()) {
				t.Fatalf("%q: token %q at %d, %d bytes read", doc, w.Raw(), w.Offset(), len(got))
			}
			for _, a := range w.Attrs() {
				if a.KeyStart > a.KeyEnd || a.KeyEnd > a.ValStart || a.ValStart > a.ValEnd || a.ValEnd > len(w.Raw()) {
					t.Fatalf("%q: attribute %+v out of its tag %q", doc, a, w.Raw())
				}
				_ = AttrValue(w.Raw()[a.ValStart:a.ValEnd])
			}
			got = append(got, w.Raw()...)
		}
		got = append(got, w.Raw()...)
		if !bytes.Equal(got, doc) {
			t.Fatalf("tokens %q, document %q", got, doc)
		}
	})
}

// FuzzHTML: HTML never panics, and a document without "&" yields
// references written in it.
func FuzzHTML(f *testing.F) {
	seedFiles(f, "*.html")
	f.Add([]byte(`<svg><a href=x></a></svg><meta http-equiv=refresh content="0;url=y">`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		refs, _, _ := HTML(doc, "example.org")
		if bytes.IndexByte(doc, '&') >= 0 || bytes.IndexByte(doc, 0) >= 0 || canonMayChange(doc) {
			return
		}
		for _, r := range refs {
			if !bytes.Contains(doc, []byte(r.URL)) {
				t.Fatalf("%q: reference %q is not in the document", doc, r.URL)
			}
		}
	})
}

// canonMayChange reports whether the tree builder may change the bytes
// of doc's values (carriage returns, foreign content).
func canonMayChange(doc []byte) bool {
	return bytes.IndexByte(doc, '\r') >= 0 || bytes.Contains(bytes.ToLower(doc), []byte("<svg")) ||
		bytes.Contains(bytes.ToLower(doc), []byte("<math"))
}

// FuzzCSS: the spans CSS reports are in order, do not overlap, are not
// empty and lie inside the text.
func FuzzCSS(f *testing.F) {
	for _, s := range []string{`@import "a.css"; b{background:url( 'c.png' )}`, `url(`, `@import '`, `/* url(x) */`,
		`image-set("a" 1x, url(b) 2x)`, `-webkit-image-set('a'`, `url(a b)`, `"\"url(x)"`, "'a\nb' url(c)"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, css []byte) {
		last := 0
		CSS(css, func(sp Span) {
			if sp.Start < last || sp.End <= sp.Start || sp.End > len(css) {
				t.Fatalf("%q: span %v after %d", css, sp, last)
			}
			last = sp.End
		})
	})
}

// FuzzScanJS: ScanJS never panics; the references it reports lie inside
// the script, in order, and a specifier is the contents of a string or
// template literal (between two equal quotes, or running to the end).
func FuzzScanJS(f *testing.F) {
	for _, s := range []string{`import a from "./a.js?v=1";`, `export * from '../b.js'`, `import("./c.js")`,
		`import {x} from`, `import "`, `// import "./d.js"` + "\nimport './e.js'", `export{a}from"/f.js"`,
		`new URL("./i.png", import.meta.url)`, `new Worker('/w.js')`, `x = /"/; import("./r.js")`,
		"`a${`b${import('./t.js')}`}`", `a = b / c; import "./d.js"`, `1abc; import "./n.js"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		last := 0
		ScanJS(js, func(r JSRef) {
			sp := r.Span
			if r.Kind == DynamicImport {
				if r.Call.Start < last || r.Call.End > len(js) || !strings.HasPrefix(string(js[r.Call.Start:]), "import") || js[r.Call.End-1] != '(' {
					t.Fatalf("%q: import call at %v", js, r.Call)
				}
				last = r.Call.End
				if sp.Start < 0 {
					return
				}
			}
			if sp.Start < last || sp.Start > sp.End || sp.End > len(js) || sp.Start == 0 {
				t.Fatalf("%q: %v at %v after %d", js, r.Kind, sp, last)
			}
			if r.Kind != Literal && (sp.End >= len(js) || js[sp.Start-1] != js[sp.End] || !strings.ContainsRune("\"'`", rune(js[sp.End]))) {
				t.Fatalf("%q: specifier %q is not a string's contents", js, js[sp.Start:sp.End])
			}
			last = sp.Start
		})
	})
}

// FuzzRefreshURL: the span RefreshURL reports lies inside the value and
// is not empty.
func FuzzRefreshURL(f *testing.F) {
	for _, s := range []string{"0; url=/a", "0;URL = '/b'", `3; "c.html"`, "5", "0; url=\"", "1, /d", "0;url", ";"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if sp, ok := RefreshURL(v); ok && (sp.Start < 0 || sp.End <= sp.Start || sp.End > len(v)) {
			t.Fatalf("%q: span %v", v, sp)
		}
	})
}

// FuzzAttrValue: decoding never panics and keeps a value without "&".
func FuzzAttrValue(f *testing.F) {
	for _, s := range []string{"?a=1&not=2", "&amp;&lt", "&#x41;&#65", "&copy", "&copy=", "&", "&#", "&#;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := AttrValue([]byte(v))
		if !strings.Contains(v, "&") && got != v {
			t.Fatalf("%q decoded as %q", v, got)
		}
	})
}
