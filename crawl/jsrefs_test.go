package crawl

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestInlineScriptRefs: a page's inline scripts are read as scripts (and
// data blocks, scripts with src and scripts in templates are not), by
// the token path and the tree alike.
func TestInlineScriptRefs(t *testing.T) {
	base, _ := url.Parse("http://example.org/dir/page.html")
	page := `<html><head><script type="module">import {a} from "./a.js?v=1"; import("./lazy.js?v=2");</script>
<script>document.write('<img src="./w.png?v=3">'); new Worker("./worker.js")</script>
<script type="application/json">{"x": "/data/no.png"}</script>
<script src="/s.js">"/img/no.png"</script>
<template><script>"/img/no-template.png"</script></template>
</head><body><script type="text/javascript">i.src = "http://example.org/img/abs.png?v=4"</script></body></html>`
	_, reqs := ExtractRequisites(base, "text/html", []byte(page))
	var want []string
	for _, p := range []string{"/dir/a.js?v=1", "/dir/lazy.js?v=2", "/dir/w.png?v=3", "/dir/worker.js", "/s.js", "/img/abs.png?v=4"} {
		want = append(want, "http://example.org"+p)
	}
	slices.Sort(want)
	if !slices.Equal(reqs, want) {
		t.Errorf("requisites %q\nwant %q", reqs, want)
	}
	_, tree := ExtractRequisites(base, "text/html", []byte(strings.Replace(page, "<body>", "<body><svg></svg>", 1)))
	if !slices.Equal(tree, reqs) {
		t.Errorf("tree: requisites %q\nwant %q", tree, reqs)
	}
}

// TestScriptAndRedirectRequisites crawls a page whose script imports a
// module with import() that builds an image by its URL, and whose image
// redirects to a URL with a query: all of them are archived the same day
// while AllowDynamic is off; a navigational link that redirects to a URL
// with a query is not followed there.
func TestScriptAndRedirectRequisites(t *testing.T) {
	s := newSite(t, map[string]string{
		"/index.html": `<html><head><script type="module" src="/app.js?v=1"></script></head>
<body><img src="/img/moved.png?v=1"><img src="/logo.png"><a href="/old.html">old</a></body></html>`,
		"/new.html": `<html><body>new</body></html>`,
	})
	s.setPage("/app.js", page{status: 200, ctype: "text/javascript", body: `import("./widget.js?v=2").then((m) => m.fill());`})
	s.setPage("/widget.js", page{status: 200, ctype: "text/javascript",
		body: `export function fill() { const i = new Image(); i.src = "` + s.url("/img/widget.png?v=3") + `"; }`})
	s.setPage("/img/widget.png", page{status: 200, ctype: "image/png", body: "png"})
	s.setPage("/img/new.png", page{status: 200, ctype: "image/png", body: "png"})
	s.setPage("/logo-v2.png", page{status: 200, ctype: "image/png", body: "png"})
	s.redirects["/img/moved.png"] = "/img/new.png?v=1"
	s.redirects["/logo.png"] = "/logo-v2.png?h=abc"
	s.redirects["/old.html"] = "/new.html?from=old"
	clock := &fakeClock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	cfg := testConfig(clock)
	cfg.ContentTypes = []string{"*/*"}
	a := newMemArchive()
	c := startReqCrawler(t, cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/index.html")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	for _, p := range []string{"/app.js?v=1", "/widget.js?v=2", "/img/widget.png?v=3", "/img/moved.png?v=1", "/img/new.png?v=1",
		"/logo.png", "/logo-v2.png?h=abc", "/old.html"} {
		if a.count(s.url(p)) != 1 {
			t.Errorf("%s not archived", p)
		}
	}
	if n := len(s.requests("/new.html?from=old")); n != 0 {
		t.Errorf("the navigational redirect's target with a query was fetched %d times", n)
	}
}

// TestInlineScriptSelfClosing: "<script/>" opens a script element, and
// the token path reads the text after it as the tree does.
func TestInlineScriptSelfClosing(t *testing.T) {
	base, _ := url.Parse("http://example.org/")
	for _, page := range []string{`<p><script/>"/a.png"</script></p>`, `<script/>"/a.png"<b>x</b></script>`} {
		_, tok := ExtractRequisites(base, "text/html", []byte(page))
		_, tree := ExtractRequisites(base, "text/html", []byte("<svg></svg>"+page))
		if !slices.Equal(tok, tree) || !slices.Equal(tok, []string{"http://example.org/a.png"}) {
			t.Errorf("%s: tokens %q, tree %q, want the image", page, tok, tree)
		}
	}
}
