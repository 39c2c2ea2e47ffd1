package links

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/webrefs"
)

// FuzzCarriedOneWalk: a page webrefs reads as tokens carries the same
// links with the same anchor texts from one walk as from two (the
// crawler's extraction, then anchortext's own tokenizer).
func FuzzCarriedOneWalk(f *testing.F) {
	for _, p := range []string{"../../internal/webrefs/testdata/tricky.html", "../../internal/webrefs/testdata/foreign.html"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`<base href="/b/"><a href="x">one &amp; <img alt="two"> three</a><a href="x">again</a>` +
		`<area href="/map" alt="Map &lt;1&gt;"><A HREF="Y?a=1&amp;b=2">Upper</A><a href=z><a href=w>nested</a>` +
		`<a href=im><image alt="an image, an img in the tree, not in the tokens" src=i.png></a><a href="#top">top</a><a href="javascript:x()">js</a>`))
	f.Add([]byte("<a href=x><style>\r\n@import \"s.css\";\r\ndiv{background:url(b&amp;.png)}\r\n</style></a><a href=y><script>\r\nlocation.href = \"/j.html\";\r\n</script>y</a>"))
	f.Add([]byte(`<template><base href="http://tpl.example/"></template><a href=t>tpl</a><script>document.write('<a href=s>')</script>` +
		`<style>a{background:url(bg.png)}</style><textarea><a href=ta>no</a></textarea><a href=end>` + strings.Repeat("long ", 300)))
	f.Add([]byte("<a href='q'>\x00nul\r\ncrlf</a><a href=\"e\" href=\"second\">dup</a><a\thref=tab\n>tab</a><a href=>empty</a>"))
	base, _ := url.Parse("http://a.example/dir/page.html")
	f.Fuzz(func(t *testing.T, b []byte) {
		if !webrefs.ReadsTokens(b) {
			return
		}
		ls1, an1 := carried(base, "text/html", b, true)
		ls2, an2 := carried(base, "text/html", b, false)
		if !slices.Equal(ls1, ls2) {
			t.Fatalf("%q: links of one walk %q, of two %q", b, ls1, ls2)
		}
		if len(ls2) > 0 && !maps.Equal(an1, an2) {
			t.Fatalf("%q: anchors of one walk %q, of two %q", b, an1, an2)
		}
	})
}

// BenchmarkCarried reads a page's links and anchor texts in one walk
// and in two (the baseline, as before one walk): a page of 60 short
// paragraphs with links, and one whose text is one 12 KiB paragraph
// after 60 links, as the scale benchmark's web serves (docs/scale.md).
//
//	go test -run - -bench BenchmarkCarried -benchmem ./node/links/
func BenchmarkCarried(b *testing.B) {
	var paras, long strings.Builder
	long.WriteString("<!doctype html><html><head><title>One run</title></head><body><nav>")
	for i := range 60 {
		fmt.Fprintf(&paras, "<p>Paragraph %d of the archive's prose, with <a href=\"/p/%d.html\">a link</a> and <em>emphasis</em> in it.</p>\n", i, i)
		fmt.Fprintf(&long, "<a href=\"/p/%d.html\">link %d</a>\n", i, i)
	}
	long.WriteString("</nav><article><p>")
	for long.Len() < 12<<10 {
		long.WriteString("the archive keeps every version of every page it crawls ")
	}
	long.WriteString("</p></article></body></html>")
	base, _ := url.Parse("http://a.example/dir/page.html")
	for _, p := range []struct {
		name string
		doc  []byte
	}{{"paragraphs", []byte(paras.String())}, {"onerun", []byte(long.String())}} {
		for _, walks := range []int{1, 2} {
			b.Run(fmt.Sprintf("page=%s/walks=%d", p.name, walks), func(b *testing.B) {
				b.SetBytes(int64(len(p.doc)))
				for b.Loop() {
					if ls, _ := carried(base, "text/html", p.doc, walks == 1); len(ls) != 60 {
						b.Fatalf("%d links, want 60", len(ls))
					}
				}
			})
		}
	}
}
