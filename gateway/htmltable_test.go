package gateway

import (
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/webrefs"
)

// TestAttrRewrites rewrites one tag per row: every kind of attrRewrites,
// an element's own entry over the "*" one, and attributes the table does
// not name (or names for other elements) kept as they are.
func TestAttrRewrites(t *testing.T) {
	const web = "/web/20140101/http://example.com/"
	for _, tc := range []struct{ in, want string }{
		{`<a href="/a">`, `<a href="` + web + `a">`},
		{`<use xlink:href="/s.svg#i">`, `<use xlink:href="` + web + `s.svg#i">`},
		{`<img src="/i.png">`, `<img src="` + web + `i.png">`},
		{`<iframe src="/f.html">`, `<iframe src="/web/20140101if_/http://example.com/f.html">`},
		{`<frame src="/f.html">`, `<frame src="/web/20140101if_/http://example.com/f.html">`},
		{`<img srcset="/1.png 1x, /2.png 2x">`, `<img srcset="` + web + `1.png 1x, ` + web + `2.png 2x">`},
		{`<link imagesrcset="/1.png 1x">`, `<link imagesrcset="` + web + `1.png 1x">`},
		{`<form action="/f">`, `<form action="` + web + `f">`},
		{`<button formaction="/f">`, `<button formaction="` + web + `f">`},
		{`<td background="/b.png">`, `<td background="` + web + `b.png">`},
		{`<video poster="/p.png">`, `<video poster="` + web + `p.png">`},
		{`<object data="/o.swf">`, `<object data="` + web + `o.swf">`},
		{`<div data="/o.swf">`, `<div data="/o.swf">`},
		{`<p style="background:url(/b.png)">`, `<p style="background:url(` + web + `b.png)">`},
		{`<meta http-equiv="refresh" content="0; url=/n">`, `<meta http-equiv="refresh" content="0; url=` + web + `n">`},
		{`<meta name="x" content="/n">`, `<meta name="x" content="/n">`},
		{`<div content="/n">`, `<div content="/n">`},
		{`<script src="/s.js" integrity="sha384-x">`, `<script src="` + web + `s.js" data-herod-integrity="sha384-x">`},
		{`<img src="/i.png" integrity="sha384-x">`, `<img src="` + web + `i.png" integrity="sha384-x">`},
		{`<a title="/t" data-href="/d">`, `<a title="/t" data-href="/d">`},
	} {
		rw, err := NewRewriter("http://example.com/page.html", "20140101")
		if err != nil {
			t.Fatal(err)
		}
		if got := string(rw.HTML([]byte(tc.in), nil, nil)); got != tc.want {
			t.Errorf("%s\ngot  %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestRewritesWholeTable rewrites, for each row of internal/webrefs's
// attribute table, one tag holding a URL in that attribute: the gateway
// changes every one (integrity by its name).
func TestRewritesWholeTable(t *testing.T) {
	for _, a := range webrefs.Table() {
		tag := a.Tag
		if tag == "*" {
			tag = "div"
		}
		val, extra := "/x.png", ""
		switch a.Kind {
		case webrefs.Style:
			val = "background:url(/x.png)"
		case webrefs.Refresh:
			val, extra = "0; url=/x.html", ` http-equiv="refresh"`
		case webrefs.Srcset:
			val = "/x.png 2x"
		}
		in := "<" + tag + extra + " " + a.Name + `="` + val + `">`
		rw, err := NewRewriter("http://example.com/page.html", "20140101")
		if err != nil {
			t.Fatal(err)
		}
		got := string(rw.HTML([]byte(in), nil, nil))
		if got == in || (a.Kind != webrefs.Integrity && !strings.Contains(got, "/web/20140101")) {
			t.Errorf("%s %s: %s kept as %s", a.Tag, a.Name, in, got)
		}
	}
}
