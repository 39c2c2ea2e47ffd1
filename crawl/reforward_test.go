package crawl

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestLinksInto: the links of the pages a crawler fetched, those in the
// asked range only, each once, and the page requisites the scope admits
// only as such (a query string) apart.
func TestLinksInto(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, map[string]string{
		"/":  links(nil, "/a", "/b") + `<img src="/i.png?v=1">`,
		"/a": links(nil, "/b", "/c"),
		"/b": "<p>b</p>", "/c": "<p>c</p>",
	})
	c, _ := startCrawler(t, t.TempDir(), testConfig(newClock()), newMemArchive())
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	links, reqs, err := c.LinksInto(ctx, func(u string) bool { return !strings.HasSuffix(u, "/c") })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(links)
	if want := []string{s.url("/a"), s.url("/b")}; !slices.Equal(links, want) {
		t.Fatalf("links %q, want %q", links, want)
	}
	if want := []string{s.url("/i.png?v=1")}; !slices.Equal(reqs, want) {
		t.Fatalf("requisites %q, want %q", reqs, want)
	}
}
