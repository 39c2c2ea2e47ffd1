package crawl

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/sampleweb"
)

// reqForwarder is a loopForwarder that also delivers requisites, to
// AddRequisites: a one-node ring whose node implements RequisiteForwarder.
type reqForwarder struct {
	loopForwarder
}

func (f *reqForwarder) ForwardRequisites(ctx context.Context, urls []string) error {
	f.mu.Lock()
	f.got = append(f.got, slices.Clone(urls))
	c := f.c
	f.mu.Unlock()
	return c.AddRequisites(ctx, urls)
}

var _ RequisiteForwarder = (*reqForwarder)(nil)

// startReqCrawler is startCrawler with a reqForwarder.
func startReqCrawler(t *testing.T, cfg Config, a Archive) *Crawler {
	t.Helper()
	f := &reqForwarder{}
	c, err := New(t.TempDir(), cfg, depsOf(a, f))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestExtractRequisites(t *testing.T) {
	base, _ := url.Parse("http://example.org/dir/page.html")
	const page = `<html><head>
<link rel="stylesheet" href="/_static/pydoctheme.css?2022.1">
<link rel="alternate stylesheet" href="alt.css?v=2">
<link rel="icon" href="/favicon.ico?v=3">
<link rel="modulepreload" href="/m.js?v=4">
<link rel="canonical" href="/canonical?x=1">
<link rel="next" href="/page2">
<style>@import "imp.css?v=5"; body{background:url(bg.png?v=6)}</style>
<meta http-equiv="refresh" content="30; url=/refreshed?r=1">
</head><body>
<a href="/search?q=x">s</a><area href="/area?x=1">
<img src="i.png?v=7" srcset="i2.png?v=8 2x, i3.png 3x">
<picture><source srcset="s.webp?v=9"></picture>
<video poster="poster.jpg?v=10" src="v.mp4"></video>
<iframe src="/frame?id=11"></iframe>
<script type="module" src="app.js?v=12"></script>
<div style="background:url('div.png?v=13')"></div>
<a href="i.png?v=7">the image, also a link</a>
</body></html>`
	links, reqs := ExtractRequisites(base, "text/html", []byte(page))
	wantLinks := []string{"http://example.org/area?x=1", "http://example.org/canonical?x=1", "http://example.org/page2",
		"http://example.org/refreshed?r=1", "http://example.org/search?q=x"}
	if !slices.Equal(links, wantLinks) {
		t.Errorf("links %q\nwant %q", links, wantLinks)
	}
	var wantReqs []string
	for _, p := range []string{"/_static/pydoctheme.css?2022.1", "/dir/alt.css?v=2", "/favicon.ico?v=3", "/m.js?v=4", "/dir/imp.css?v=5",
		"/dir/bg.png?v=6", "/dir/i.png?v=7", "/dir/i2.png?v=8", "/dir/i3.png", "/dir/s.webp?v=9", "/dir/poster.jpg?v=10",
		"/dir/v.mp4", "/frame?id=11", "/dir/app.js?v=12", "/dir/div.png?v=13"} {
		wantReqs = append(wantReqs, "http://example.org"+p)
	}
	slices.Sort(wantReqs)
	if !slices.Equal(reqs, wantReqs) {
		t.Errorf("requisites %q\nwant %q", reqs, wantReqs)
	}
	// The goquery tree classifies as the tokens do (an <svg> sends the page there).
	tl, tr := ExtractRequisites(base, "text/html", []byte(strings.Replace(page, "<body>", "<body><svg></svg>", 1)))
	if !slices.Equal(tl, links) || !slices.Equal(tr, reqs) {
		t.Errorf("tree: links %q requisites %q", tl, tr)
	}
	// CSS: every reference is a requisite.
	if l, r := ExtractRequisites(base, "text/css", []byte(`@import url("a.css?v=1"); @font-face{src:url(f.woff2?v=2)}`)); len(l) != 0 || len(r) != 2 {
		t.Errorf("css: links %q requisites %q", l, r)
	}
}

func TestJSImports(t *testing.T) {
	base, _ := url.Parse("http://example.org/js/app.js")
	js := `import a from "./a.js?v=1";
import {b, c} from '../b.js';
import * as d from "/d.mjs?x=2"
import "./side.js";
export {e} from "./e.js";
export * from "https://cdn.example.org/f.js";
import lodash from "lodash";
const m = import("./dynamic.js");
let s = "import x from './in-string.js'"; reimport("./no.js");
// import z from "./commented.js";
/* import y from "./commented2.js"; */
export const k = 1;
if (x) { import("./lazy.js") }
`
	l, r := ExtractRequisites(base, "text/javascript", []byte(js))
	// import() with a string specifier is a requisite too (jsLoads);
	// reimport( is not import(, and a relative path in a string of a
	// script file is not taken (jsLiterals).
	want := []string{"http://example.org/b.js", "http://example.org/d.mjs?x=2", "http://example.org/js/a.js?v=1",
		"http://example.org/js/dynamic.js", "http://example.org/js/e.js", "http://example.org/js/lazy.js",
		"http://example.org/js/side.js", "https://cdn.example.org/f.js"}
	if len(l) != 0 || !slices.Equal(r, want) {
		t.Errorf("links %q requisites %q\nwant %q", l, r, want)
	}
}

// TestRequisitesWithQuery crawls a Sphinx-like page on a real server:
// its stylesheet with a cache-busting query, the sheets that one
// @imports (with queries too), a module script and what it imports are
// archived with their query strings while AllowDynamic is off; the
// page's navigational link with a query is not fetched.
func TestRequisitesWithQuery(t *testing.T) {
	s := newSite(t, map[string]string{
		"/index.html": `<html><head><link rel="stylesheet" href="/_static/pydoctheme.css?2022.1">
<script type="module" src="/_static/app.js?v=3"></script></head>
<body><a href="/search?q=x">search</a><a href="/about.html">about</a><img srcset="/img/a.png?w=100 1x, /img/a.png?w=200 2x"></body></html>`,
		"/about.html": `<html><body>about</body></html>`,
	})
	s.setPage("/_static/pydoctheme.css", page{status: 200, ctype: "text/css", body: `@import url("basic.css?v=1"); @import 'fonts.css?family=x';`})
	s.setPage("/_static/basic.css", page{status: 200, ctype: "text/css", body: `body{background:url(bg.png?v=2)}`})
	s.setPage("/_static/fonts.css", page{status: 200, ctype: "text/css", body: `@font-face{src:url(f.woff2?v=4)}`})
	s.setPage("/_static/bg.png", page{status: 200, ctype: "image/png", body: "png"})
	s.setPage("/_static/f.woff2", page{status: 200, ctype: "font/woff2", body: "woff2"})
	s.setPage("/_static/app.js", page{status: 200, ctype: "text/javascript", body: `import {x} from "./dep.js?v=5";`})
	s.setPage("/_static/dep.js", page{status: 200, ctype: "text/javascript", body: `export const x = 1;`})
	s.setPage("/img/a.png", page{status: 200, ctype: "image/png", body: "png"})
	s.setPage("/search", page{status: 200, ctype: "text/html", body: "results"})
	clock := &fakeClock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	cfg := testConfig(clock)
	cfg.ContentTypes = []string{"*/*"}
	// Before: with the exemption off, only the two pages are fetched.
	cfg.PageRequisites = -1
	before := startReqCrawler(t, cfg, newMemArchive())
	if err := before.Add(context.Background(), []string{s.url("/index.html")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, before)
	cfg.PageRequisites = 0
	a := newMemArchive()
	c := startReqCrawler(t, cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/index.html")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	t.Logf("fetches: %d without the requisite exemption, %d with it; bytes %d and %d",
		before.Stats().FetchedToday, c.Stats().FetchedToday, before.Stats().BytesFetched, c.Stats().BytesFetched)
	if n := before.Stats().FetchedToday; n != 2 {
		t.Errorf("without the exemption %d fetches, want 2 (the pages)", n)
	}
	for _, p := range []string{"/_static/pydoctheme.css?2022.1", "/_static/basic.css?v=1", "/_static/fonts.css?family=x",
		"/_static/bg.png?v=2", "/_static/f.woff2?v=4", "/_static/app.js?v=3", "/_static/dep.js?v=5",
		"/img/a.png?w=100", "/img/a.png?w=200", "/about.html"} {
		if a.count(s.url(p)) != 1 {
			t.Errorf("%s not archived", p)
		}
	}
	if n := len(s.requests("/search?q=x")); n != 0 || a.count(s.url("/search?q=x")) != 0 {
		t.Errorf("the navigational link /search?q=x was fetched %d times", n)
	}
}

// TestRequisiteCaps: a page with more requisites with a query than
// PageRequisites has the first ones fetched and the rest counted;
// HostRequisites bounds what one host gets in a day across pages.
func TestRequisiteCaps(t *testing.T) {
	var b strings.Builder
	for i := range 80 {
		fmt.Fprintf(&b, `<img src="/img.png?n=%02d">`, i)
	}
	s := newSite(t, map[string]string{"/p.html": "<html><body>" + b.String() + `<a href="/q.html">q</a></body></html>`,
		"/q.html": `<html><body><img src="/other.png?a=1"><img src="/other.png?a=2"><img src="/other.png?a=3"></body></html>`})
	s.setPage("/img.png", page{status: 200, ctype: "image/png", body: "png"})
	s.setPage("/other.png", page{status: 200, ctype: "image/png", body: "png"})
	clock := &fakeClock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	cfg := testConfig(clock)
	cfg.PageRequisites = 50
	cfg.HostRequisites = 52
	a := newMemArchive()
	c := startReqCrawler(t, cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/p.html")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	imgs, others := 0, 0
	for _, r := range s.requests("") {
		switch {
		case strings.HasPrefix(r.path, "/img.png?"):
			imgs++
		case strings.HasPrefix(r.path, "/other.png?"):
			others++
		}
	}
	// The two pages are processed concurrently: which of their requisites
	// the host's day cap leaves out depends on the order.
	if imgs > 50 || others > 3 || imgs+others != 52 {
		t.Errorf("fetched %d images of p.html (cap 50 a page) and %d of q.html (52 a host a day): want at most 50 and 3, 52 in all", imgs, others)
	}
	if n := c.Stats().ErrorsByKind[KindRequisites]; n != 2 {
		t.Errorf("requisite_cap counted %d times, want 2 (one page over, one requisite over the host's day)", n)
	}
}

// TestRequisiteFetchesSampleWeb measures the extra fetches per page that
// requisites with a query cost on the sample web (3 hosts, 600 pages):
// one crawl with the exemption off (PageRequisites -1, the crawler
// before requisites were told from links), one with the defaults. It
// prints both (go test ./crawl -run TestRequisiteFetchesSampleWeb -v).
func TestRequisiteFetchesSampleWeb(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls the sample web twice")
	}
	var fetched, bytes [2]int64
	var pages int
	for i, perPage := range []int{-1, 0} {
		web := sampleweb.New(sampleweb.Config{})
		if err := web.Start(context.Background()); err != nil {
			t.Skipf("sample web cannot listen on 127.0.0.2-4: %v", err)
		}
		clock := newClock()
		cfg := testConfig(clock)
		cfg.PageRequisites = perPage
		a := newMemArchive()
		c := startReqCrawler(t, cfg, a)
		if err := c.Add(context.Background(), web.Seeds()); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, c)
		fetched[i], bytes[i] = c.Stats().FetchedToday, c.Stats().BytesFetched
		pages = 0
		for _, u := range a.urls() {
			if vs := a.versions[u]; strings.HasPrefix(vs[0].Header.Get("Content-Type"), "text/html") {
				pages++
			}
		}
		web.Close()
	}
	t.Logf("sample web: %d HTML pages; fetches %d without the requisite exemption, %d with it: %.3f extra fetches per page; bytes fetched per page %.0f and %.0f",
		pages, fetched[0], fetched[1], float64(fetched[1]-fetched[0])/float64(pages), float64(bytes[0])/float64(pages), float64(bytes[1])/float64(pages))
	if fetched[1] < fetched[0] {
		t.Errorf("fewer fetches with requisites (%d) than without (%d)", fetched[1], fetched[0])
	}
}
