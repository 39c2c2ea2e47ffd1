package exchange

import (
	"slices"
	"strings"
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
