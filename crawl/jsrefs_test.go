package crawl

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJSRefs: what a script loads that jsRefs sees — import(), new URL(…,
// import.meta.url), workers, and string literals naming resources of the
// script's own host — and what it leaves alone.
func TestJSRefs(t *testing.T) {
	for _, tc := range []struct {
		name, js string
		inline   bool
		want     []string
	}{
		{"dynamic import", `import("./lib/widget.js?v=2024.1").then(m => m.fill())`, false, []string{"./lib/widget.js?v=2024.1"}},
		{"import with quotes", "const m = await import('/m.mjs'); import(`./t.js`)", false, []string{"./t.js", "/m.mjs"}},
		{"computed import", "import(`./${name}.js`); import(name); import('lodash')", false, nil},
		{"not import", `reimport("./a.js"); x.import("./b.js")`, false, nil},
		{"new URL with import.meta.url", `new URL("./icon.svg", import.meta.url); new URL('./w.js',
   import.meta.url)`, false, []string{"./icon.svg", "./w.js"}},
		{"new URL against the page", `new URL("./x", location.href)`, false, nil},
		{"worker", `new Worker("/w.js?v=1"); new SharedWorker('/s.js'); importScripts("/i.js")`, false, []string{"/w.js?v=1", "/s.js", "/i.js"}},
		{"relative worker in a file", `new Worker("w.js"); new Worker("./w.js")`, false, nil},
		{"relative worker inline", `new Worker("./w.js")`, true, []string{"./w.js"}},
		{"markup in a string", `el.innerHTML = '<img src="/img/built.png?v=1" alt="b">';`, false, []string{"/img/built.png?v=1"}},
		{"escaped markup", `el.innerHTML = "<img src=\"/img/e.png\">";`, false, []string{"/img/e.png"}},
		{"absolute same host", `i.src = "http://example.org/img/widget.png?v=1";`, false, []string{"http://example.org/img/widget.png?v=1"}},
		{"absolute other host", `i.src = "http://cdn.example.net/img/w.png";`, false, nil},
		{"protocol-relative", `i.src = "//example.org/img/w.png";`, false, nil},
		{"pages and directories", `go("/about.html"); go("/api/items"); go("/img/")`, false, nil},
		{"relative in a file", `i.src = "./img/r.png"; j.src = "img/s.png"`, false, nil},
		{"relative inline", `i.src = "./img/r.png"; j.src = "../s.png"`, true, []string{"./img/r.png", "../s.png"}},
		{"template with substitution", "i.src = `/img/${n}.png`", false, nil},
		{"template without", "i.src = `/img/t.png`", false, []string{"/img/t.png"}},
		{"concatenation", `"a" + "/img/c.png" + "b"`, false, []string{"/img/c.png"}},
		{"data json and font", `fetch("/data/config.json"); f = "/f/x.woff2?v=3"`, false, []string{"/data/config.json", "/f/x.woff2?v=3"}},
		{"unterminated", `x = "/img/u.png`, false, nil},
		{"static import kept", `import a from "./a.js"; export * from "/b.js"`, false, []string{"./a.js", "/b.js"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range jsRefs([]byte(tc.js), "example.org", tc.inline, nil) {
				if !r.embed {
					t.Errorf("%q is not a requisite", r.s)
				}
				got = append(got, r.s)
			}
			// The same URL found twice (a worker's path is a literal too)
			// is one requisite once resolved (splitRefs).
			slices.Sort(got)
			got = slices.Compact(got)
			slices.Sort(tc.want)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestJSLiteralsCap: a script full of resource paths yields maxJSLiterals.
func TestJSLiteralsCap(t *testing.T) {
	js := strings.Repeat(`x("/img/a.png"); `, 3*maxJSLiterals)
	if n := len(jsLiterals([]byte(js), "example.org", false, nil)); n != maxJSLiterals {
		t.Errorf("%d literals, want %d", n, maxJSLiterals)
	}
}

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

// FuzzJSRefs: the script scanner never panics, and every reference it
// returns is a requisite written in the script.
func FuzzJSRefs(f *testing.F) {
	for _, s := range []string{`import("./a.js")`, `new URL("./b.png", import.meta.url)`, `new Worker("/w.js")`,
		`x.innerHTML = '<img src="/i.png?v=1">'`, "`/t.png`", `"\"/e.png\\"`, `import(`, `new URL("`, `"/a.png`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, js []byte, inline bool) {
		for _, r := range jsRefs(js, "example.org", inline, nil) {
			if !r.embed || !strings.Contains(string(js), r.s) {
				t.Fatalf("%q: ref %q", js, r.s)
			}
		}
	})
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
