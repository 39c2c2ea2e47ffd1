package exchange

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/webrefs"
)

// TestParseHTMLLinksFromTable: a page's links are every URL the shared
// table (internal/webrefs) names — followed, loaded or neither — with
// CSS and inline scripts, resolved against the first <base> outside a
// template; fragments, javascript: and data: URLs are not links.
func TestParseHTMLLinksFromTable(t *testing.T) {
	page := `<template><base href="http://tpl.example/"></template><base href="/b/"><base href="/late/">
<a href="a">a</a><form action="/search"><button formaction="go">g</button></form>
<img src="i.png" srcset="i2.png 2x, /i3.png 3x"><div style="background:url(bg.png)"></div>
<style>@import "s.css";</style><script type=module>import "./m.js"; x = "/img/x.png"</script>
<meta http-equiv="refresh" content="0; url=next.html"><a href="#top">t</a><a href="javascript:void 0">j</a>
<img src="data:image/png;base64,AA==">`
	want := []string{
		"http://a.example/b/a", "http://a.example/b/bg.png", "http://a.example/b/go", "http://a.example/b/i.png",
		"http://a.example/b/i2.png", "http://a.example/b/m.js", "http://a.example/b/next.html", "http://a.example/b/s.css",
		"http://a.example/i3.png", "http://a.example/img/x.png", "http://a.example/search",
	}
	if got := ParseHTML("http://a.example/x/y.html", []byte(page)).Links; !slices.Equal(got, want) {
		t.Errorf("links\n got %q\nwant %q", got, want)
	}
}

// TestCollapse checks collapse against strings.Fields joined by spaces,
// on white space of every kind, invalid UTF-8 and empty input.
func TestCollapse(t *testing.T) {
	for _, s := range []string{"", " ", "a", "  a  b\t\tc\n", "\u00a0x\u2003y\u3000", "é \xff\xfe z", strings.Repeat("w ", 100)} {
		if got, want := collapse(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Errorf("collapse(%q) = %q, want %q", s, got, want)
		}
	}
	long := strings.Repeat("word ", maxText/5+10)
	if got := collapse(long); len(got) != maxText || got != strings.Join(strings.Fields(long), " ")[:maxText] {
		t.Errorf("collapse of %d bytes: %d bytes, want the first %d", len(long), len(got), maxText)
	}
}

// FuzzParseHTMLOneWalk: a document webrefs reads as tokens gives the
// same title, text and links from one walk as from two (webrefs.HTML's
// tokens, then the text's own tokenizer).
func FuzzParseHTMLOneWalk(f *testing.F) {
	for _, p := range []string{"../../internal/webrefs/testdata/tricky.html", "../../internal/webrefs/testdata/foreign.html"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(homeHTML()))
	f.Add([]byte("<title>a &amp; b\r\n&lt;c&gt;</title><p>x&nbsp;y\r\nz &#x41;<style>a{background:url(s&amp;.png)}</style>" +
		"<script>var u = \"/j&amp;s.js\"</script><noscript>not <b>seen</b></noscript><a href=\"/q?a=1&amp;b=2\">q</a>"))
	f.Add([]byte("<textarea>&lt;a href=x&gt;</textarea><template><title>t2</title><img src=t.png></template>\x00<p>\x00nul"))
	f.Add([]byte("<TITLE>upper</TITLE><HEAD><BASE HREF=/b/></HEAD><Image src=i.png><plaintext>&amp; <a href=p>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !webrefs.ReadsTokens(b) {
			return
		}
		const u = "http://a.example/dir/page.html"
		one, two := parseHTML(u, b, true), parseHTML(u, b, false)
		if one.Title != two.Title || one.Text != two.Text || !slices.Equal(one.Links, two.Links) {
			t.Fatalf("%q: one walk %+v, two %+v", b, one, two)
		}
	})
}

// BenchmarkParseHTML parses pages in one walk and in two (the
// baseline, as before one walk): tricky.html (raw text, comments,
// malformed markup), a page of 60 short paragraphs with links, and a
// page whose text is one 12 KiB paragraph, as the scale benchmark's web
// serves (docs/scale.md): the tokenizer holds a whole text run at once.
//
//	go test -run - -bench BenchmarkParseHTML -benchmem ./archive/exchange/
func BenchmarkParseHTML(b *testing.B) {
	tricky, err := os.ReadFile("../../internal/webrefs/testdata/tricky.html")
	if err != nil {
		b.Fatal(err)
	}
	var paras, long strings.Builder
	paras.WriteString("<!doctype html><html><head><title>Paragraphs</title></head><body>")
	long.WriteString("<!doctype html><html><head><title>One run</title></head><body><nav>")
	for i := range 60 {
		fmt.Fprintf(&paras, "<p>Paragraph %d of the archive's prose, with <a href=\"/p/%d.html\">a link</a> and <em>emphasis</em> in it.</p>\n", i, i)
		fmt.Fprintf(&long, "<a href=\"/p/%d.html\">link %d</a>\n", i%10, i%10)
	}
	long.WriteString("</nav><article><p>")
	for long.Len() < 12<<10 {
		long.WriteString("the archive keeps every version of every page it crawls ")
	}
	long.WriteString("</p></article></body></html>")
	pages := []struct {
		name string
		doc  []byte
	}{{"tricky", tricky}, {"paragraphs", []byte(paras.String())}, {"onerun", []byte(long.String())}}
	for _, p := range pages {
		if !webrefs.ReadsTokens(p.doc) {
			b.Fatalf("%s is read as a tree", p.name)
		}
		for _, walks := range []int{1, 2} {
			b.Run(fmt.Sprintf("page=%s/walks=%d", p.name, walks), func(b *testing.B) {
				b.SetBytes(int64(len(p.doc)))
				for b.Loop() {
					parseHTML("http://a.example/dir/page.html", p.doc, walks == 1)
				}
			})
		}
	}
}
