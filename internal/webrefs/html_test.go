package webrefs

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// resolved returns the canonical http(s) URLs that refs, found in a
// document at base whose <base href> is href (when hasBase), name and a
// browser loads or follows, sorted and deduplicated, as the crawler
// keeps them.
func resolved(t testing.TB, base *url.URL, refs []Ref, href string, hasBase bool) []string {
	if hasBase {
		if b, err := canon.Resolve(base, href); err == nil {
			if bu, err := url.Parse(b); err == nil {
				base = bu
			}
		}
	}
	var out []string
	for _, r := range refs {
		s := strings.TrimSpace(r.URL)
		if r.Use == Unfetched || s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if _, c, err := canon.ResolveURL(base, s); err == nil {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FuzzTokensFindTreesLinks checks that every link goquery's tree yields
// (treeRefs, the path of pages with SVG or MathML), HTML finds too,
// whichever path it takes. The converse does not hold and is not wanted:
// markup the tree builder drops (a <td> outside a table, a second
// <body>'s attributes) still names links its author wrote.
func FuzzTokensFindTreesLinks(f *testing.F) {
	for _, p := range []string{"testdata/tricky.html", "testdata/foreign.html"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("<svg><stYle><A href=0>"))                  // markup, not raw text, in SVG
	f.Add([]byte("<stYle/>url(0"))                           // a self-closing <style> is open in HTML
	f.Add([]byte("<math><style/>url(0</math><image src=1>")) // but empty in MathML
	f.Add([]byte("<mAth><mi><imAge srC=0>"))                 // <image> is an <img> at an integration point
	base, _ := url.Parse("http://example.org/dir/page.html")
	f.Fuzz(func(t *testing.T, body []byte) {
		refs, href, ok := HTML(body, base.Host)
		got := resolved(t, base, refs, href, ok)
		trefs, thref, tok := treeRefs(body, base.Host)
		for _, l := range resolved(t, base, trefs, thref, tok) {
			if _, found := slices.BinarySearch(got, l); !found {
				t.Fatalf("%q: goquery finds %s, HTML does not (%q)", body, l, got)
			}
		}
	})
}

// TestTokensMatchTree checks that the token path finds the same links
// as goquery's tree on the test pages and on every page of a generated
// static site: tricky.html (raw-text elements, comments, malformed
// markup, a late <base>) and the site's pages are read as tokens,
// foreign.html (SVG and MathML cases a review found) goes to the tree
// and must yield each of its links.
func TestTokensMatchTree(t *testing.T) {
	docs := map[string][]byte{}
	paths, _ := filepath.Glob("testdata/*.html")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = b
	}
	dir := t.TempDir()
	if err := sampleweb.WriteStaticSite(dir, 60, 1); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		b, err := os.ReadFile(p)
		docs[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 50 {
		t.Fatalf("only %d documents", len(docs))
	}
	base, _ := url.Parse("http://example.org/dir/page.html")
	links := func(body []byte, tree bool) []string {
		f := tokenRefs
		if tree {
			f = treeRefs
		}
		refs, href, ok := f(body, base.Host)
		return resolved(t, base, refs, href, ok)
	}
	for name, body := range docs {
		if strings.HasSuffix(name, "foreign.html") {
			continue
		}
		got, want := links(body, false), links(body, true)
		if !slices.Equal(got, want) {
			t.Errorf("%s:\ntokens %q\ngoquery %q", name, got, want)
		}
		if len(want) == 0 {
			t.Errorf("%s: no links at all", name)
		}
	}
	trickyDoc := docs["testdata/tricky.html"]
	if canon.MayHaveTag(trickyDoc, "svg", "math") {
		t.Error("tricky.html is not read as tokens")
	}
	refs, href, ok := HTML(trickyDoc, base.Host)
	tricky := resolved(t, base, refs, href, ok)
	for _, l := range []string{"http://example.org/image-is-img.png", "http://example.org/in-template", "http://example.org/self-closed-style.png",
		"http://example.org/base/after-base.html", "http://example.org/refreshed", "http://example.org/dup-attr.css"} {
		if slices.Contains(tricky, l) != (l != "http://example.org/dup-attr.css") {
			t.Errorf("tricky.html: %s found: %v", l, slices.Contains(tricky, l))
		}
	}
	for _, l := range tricky {
		if strings.Contains(l, "not-in") || strings.Contains(l, "second-base") {
			t.Errorf("tricky.html: %s should not be a link", l)
		}
	}
	foreignDoc := docs["testdata/foreign.html"]
	if !canon.MayHaveTag(foreignDoc, "svg", "math") {
		t.Error("foreign.html is read as tokens")
	}
	refs, href, ok = HTML(foreignDoc, base.Host)
	foreign := resolved(t, base, refs, href, ok)
	for _, l := range []string{"svg-a", "svg-style.png", "image-after-svg.png", "cdata-style.png", "after-integration-point",
		"math-style-markup", "mi-image.png", "mismatched-end", "font-breakout.png", "after-foreign"} {
		if !slices.Contains(foreign, "http://example.org/"+l) {
			t.Errorf("foreign.html: %s not found in %q", l, foreign)
		}
	}
}
