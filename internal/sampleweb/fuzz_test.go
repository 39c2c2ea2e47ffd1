package sampleweb

import (
	"net/http"
	"strings"
	"testing"
)

func FuzzParsePagePath(f *testing.F) {
	for _, s := range []string{"/", "/news/6.html", "/docs/1.html", "/news/06.html", "/news/7.html", "/x/", "/about/999999999.html", "/wiki/3.html/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n, ok := parsePagePath(p)
		if ok && pagePath(n) != p {
			t.Fatalf("parsePagePath(%q) = %d, but pagePath(%d) = %q", p, n, n, pagePath(n))
		}
	})
}

// FuzzLookup feeds arbitrary paths and queries to the resolver: it must
// never panic, answer only 200, 301 or 404, and answer 200 for a page path
// only if the page exists that day.
func FuzzLookup(f *testing.F) {
	m := newModel(1, 2, 40, 2, false)
	bases := []string{"http://a", "http://b"}
	for _, s := range []struct {
		path, query string
		day         uint8
	}{
		{"/", "", 0}, {"/news/6.html", "session=1", 1}, {"/search", "q=%zz&lang=en", 0},
		{"/img/3.png", "", 0}, {"/img/03.png", "", 0}, {"/private/5.html", "", 2}, {"/private/6.html", "", 0},
		{"/moved.html", "", 0}, {"/css/news.css", "", 0}, {"/js/../js/app.js", "", 0}, {"/news/42.html", "", 3},
	} {
		f.Add(s.path, s.query, s.day)
	}
	f.Fuzz(func(t *testing.T, path, query string, day uint8) {
		d := int(day % 16)
		res := m.lookup(int(day)%2, path, query, d, bases, true)
		switch res.status {
		case http.StatusOK, http.StatusMovedPermanently, http.StatusNotFound:
		default:
			t.Fatalf("lookup(%q, %q) status %d", path, query, res.status)
		}
		if len(res.body) == 0 || res.ctype == "" || res.lastMod > d {
			t.Fatalf("lookup(%q, %q): %d bytes, type %q, lastMod %d on day %d", path, query, len(res.body), res.ctype, res.lastMod, d)
		}
		if n, ok := parsePagePath(path); ok && (res.status == http.StatusOK) != (n < m.pageCount(int(day)%2, d)) {
			t.Fatalf("page %d on day %d: status %d", n, d, res.status)
		}
		if res.status == http.StatusOK && strings.HasPrefix(res.ctype, "text/html") && !strings.HasPrefix(string(res.body), "<!DOCTYPE html>") {
			t.Fatalf("lookup(%q): HTML body %.40q", path, res.body)
		}
	})
}
