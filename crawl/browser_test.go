package crawl

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBrowser "renders" the pages whose path it has links for: it stores
// them (Stored) and reports those links; a page in fail it renders
// without storing it. Every page offered is recorded.
type fakeBrowser struct {
	mu      sync.Mutex
	links   map[string][]string // path -> rendered links
	fail    map[string]bool
	offered []BrowserPage
}

func (b *fakeBrowser) Render(_ context.Context, p BrowserPage) (BrowserCapture, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.offered = append(b.offered, p)
	path := p.URL[strings.Index(p.URL[len("http://"):], "/")+len("http://"):]
	if b.fail[path] {
		return BrowserCapture{}, true
	}
	l, ok := b.links[path]
	if !ok {
		return BrowserCapture{}, false
	}
	return BrowserCapture{Stored: true, Links: l}, true
}

// TestBrowserHook: a page the browser stores is not stored again by the
// crawler, its crawl state keeps its own and the rendered links, and the
// links only the render found are crawled; a page the browser leaves, or
// fails to store, is stored as fetched.
func TestBrowserHook(t *testing.T) {
	s := newSite(t, map[string]string{
		"/":       `<a href="/shell">shell</a><a href="/fail">fail</a><a href="/plain">plain</a>`,
		"/shell":  `<div id=app></div><a href="/a">a</a><script src="/app.js"></script>`,
		"/fail":   `<div id=app></div>`,
		"/plain":  `<p>text</p>`,
		"/a":      `<p>a</p>`,
		"/hidden": `<p>only a script links here</p>`,
	})
	a := newMemArchive()
	b := &fakeBrowser{links: map[string][]string{"/shell": {s.url("/hidden"), s.url("/a"), "mailto:x@example.org"}}, fail: map[string]bool{"/fail": true}}
	f := &loopForwarder{}
	d := depsOf(a, f)
	d.Browser = b
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c, err := New(t.TempDir(), testConfig(clock), d)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)

	if n := a.count(s.url("/shell")); n != 0 {
		t.Errorf("the rendered page was stored by the crawler too (%d versions)", n)
	}
	st, err := a.State(context.Background(), s.url("/shell"))
	if err != nil {
		t.Fatalf("no crawl state for the rendered page: %v", err)
	}
	for _, l := range []string{s.url("/a"), s.url("/hidden"), s.url("/app.js")} {
		if !slices.Contains(st.Outlinks, l) {
			t.Errorf("rendered page's outlinks %v lack %s", st.Outlinks, l)
		}
	}
	if len(s.requests("/hidden")) != 1 {
		t.Error("the page only the render found was not crawled")
	}
	for _, p := range []string{"/", "/fail", "/plain", "/a", "/hidden"} {
		if n := a.count(s.url(p)); n != 1 {
			t.Errorf("%s: %d versions, want 1 (stored as fetched)", p, n)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.offered) != 6 {
		t.Errorf("%d pages offered to the browser, want the 6 changed ones", len(b.offered))
	}
	for _, p := range b.offered {
		if strings.HasSuffix(p.URL, "/shell") && (!slices.Contains(p.Links, s.url("/a")) || !slices.Contains(p.Requisites, s.url("/app.js"))) {
			t.Errorf("offered %s with links %v, requisites %v", p.URL, p.Links, p.Requisites)
		}
	}
}
