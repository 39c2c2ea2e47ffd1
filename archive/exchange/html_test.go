package exchange

import (
	"slices"
	"testing"
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
