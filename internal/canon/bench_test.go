package canon

import (
	"net/url"
	"testing"
)

// benchURLs are absolute URLs as a crawl meets them: mostly plain, some
// with upper case, default ports, dot segments, escapes and queries.
var benchURLs = []string{
	"http://example.com/",
	"https://www.example.org/news/2024/05/article-title.html",
	"http://Example.COM:80/a/./b/../c/index.html",
	"https://cdn.example.net/static/js/app.3f2a1b.js?v=12&lang=en",
	"http://example.com/search?q=hello%20world&page=2#results",
	"https://en.wikipedia.org/wiki/Caf%C3%A9_%28disambiguation%29",
	"http://example.com/a%7Eb/c%2Fd/",
	"https://shop.example.com/product/12345?color=red&size=m&ref=homepage",
}

// benchRefs are links as written in a page at benchBase.
var benchRefs = []string{
	"other.html", "../up/index.html", "/abs/path?x=1", "//cdn.example.net/i.png",
	"img/logo.png", "https://other.example/page", "?page=3", "#top",
}

const benchBase = "http://example.com/dir/sub/page.html"

func BenchmarkCanonical(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Canonical(benchURLs[i%len(benchURLs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	base, err := url.Parse(benchBase)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Resolve(base, benchRefs[i%len(benchRefs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Parse(benchURLs[i%len(benchURLs)]); err != nil {
			b.Fatal(err)
		}
	}
}
