package gateway

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/rewrite")

// goldenBanner and goldenScript stand for the banner and the replay
// script's element in golden files.
const (
	goldenBanner = "<!--BANNER-->"
	goldenScript = "<!--SCRIPT-->"
)

// TestRewriteGolden rewrites each testdata/rewrite input as if it were
// archived at http://example.com/dir/<name> and replayed at 20140101, and
// compares with <name>.golden. Run with -update to regenerate.
func TestRewriteGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/rewrite/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			rw, err := NewRewriter("http://example.com/dir/"+filepath.Base(in), "20140101")
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			if strings.HasSuffix(in, ".css") {
				got = rw.CSS(src)
			} else {
				got = rw.HTML(src, []byte(goldenScript), []byte(goldenBanner))
			}
			golden := in + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestRewriteGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rewrite of %s differs from %s:\n%s", in, golden, got)
			}
		})
	}
	if n < 5 {
		t.Fatalf("only %d golden inputs found", n)
	}
}

func TestRewriteURL(t *testing.T) {
	rw, err := NewRewriter("http://example.com/a/b.html?x=1", "2014")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ref, mod, want string }{
		{"c.html", "", "/web/2014/http://example.com/a/c.html"},
		{"../c.html#f", "", "/web/2014/http://example.com/c.html#f"},
		{"  /d  ", "", "/web/2014/http://example.com/d"},
		{"//other.example/", "", "/web/2014/http://other.example/"},
		{"https://Secure.Example:443/", "", "/web/2014/https://secure.example/"},
		{"?y=2", "", "/web/2014/http://example.com/a/b.html?y=2"},
		{"frame.html", ModIframe, "/web/2014if_/http://example.com/a/frame.html"},
		{"#x", "", "#x"},
		{"", "", ""},
		{"JavaScript:alert(1)", "", "JavaScript:alert(1)"},
		{"data:text/plain,hi", "", "data:text/plain,hi"},
		{"ftp://example.com/", "", "ftp://example.com/"},
		{"http://[bad", "", "http://[bad"},
	} {
		if got := rw.URL(tc.ref, tc.mod); got != tc.want {
			t.Errorf("URL(%q, %q) = %q, want %q", tc.ref, tc.mod, got, tc.want)
		}
	}
	rw.SetBase("/base/")
	if got := rw.URL("x", ""); got != "/web/2014/http://example.com/base/x" {
		t.Errorf("after SetBase: %q", got)
	}
	rw.SetBase("javascript:1")
	if got := rw.URL("x", ""); got != "/web/2014/http://example.com/base/x" {
		t.Errorf("after invalid SetBase: %q", got)
	}
}

func TestSrcsetAndRefresh(t *testing.T) {
	rw, _ := NewRewriter("http://example.com/", "2014")
	for _, tc := range []struct{ in, want string }{
		{"a.png", "/web/2014/http://example.com/a.png"},
		{"a.png 1x, b.png 2x", "/web/2014/http://example.com/a.png 1x, /web/2014/http://example.com/b.png 2x"},
		{"a.png,b.png", "/web/2014/http://example.com/a.png,b.png"}, // one URL, as the HTML spec reads it
		{" , ", " , "},
		{"data:image/png;base64,AA== 1x", "data:image/png;base64,AA== 1x"},
	} {
		if got := rw.Srcset(tc.in); got != tc.want {
			t.Errorf("Srcset(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"0; url=/next", "0; url=/web/2014/http://example.com/next"},
		{"5;URL='n.html'", "5;URL='/web/2014/http://example.com/n.html'"},
		{"5", "5"},
		{"5; urlx", "5; /web/2014/http://example.com/urlx"}, // the URL as the crawler reads it (webrefs.RefreshURL)
		{"0;/n", "0;/web/2014/http://example.com/n"},
	} {
		if got := rw.Refresh(tc.in); got != tc.want {
			t.Errorf("Refresh(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func fuzzSeeds(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/rewrite/*")
	for _, in := range inputs {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{"", "<", "<a", "<a href", `<a href="`, "<a href=x", "<style>", "<noscript><noscript>",
		"<body><body>", "<frameset>", "<a href='\x00'>", "<meta http-equiv=refresh content='0;url=x'>", "url(", "@import '"} {
		f.Add([]byte(s))
	}
}

// FuzzHTML checks that rewriting never panics, that its output is HTML the
// parser accepts, and that a rewriter that keeps every URL keeps every byte.
func FuzzHTML(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		rw, _ := NewRewriter("http://example.com/d/", "2014")
		out := rw.HTML(doc, nil, []byte("<div>banner</div>"))
		if _, err := xhtml.Parse(bytes.NewReader(out)); err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		same, _ := NewRewriter("http://example.com/", "x")
		same.identity = true
		if got := same.HTML(doc, nil, nil); !bytes.Equal(got, doc) {
			t.Fatalf("identity rewrite changed the document:\n%q\n%q", doc, got)
		}
	})
}

func FuzzCSS(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, css []byte) {
		rw, _ := NewRewriter("http://example.com/d/", "2014")
		_ = rw.CSS(css)
		id, _ := NewRewriter("http://example.com/", "x")
		id.identity = true
		if got := id.CSS(css); !bytes.Equal(got, css) {
			t.Fatalf("identity CSS rewrite changed bytes:\n%q\n%q", css, got)
		}
	})
}

// benchDoc is a page of n links, images and styled blocks.
func benchDoc(n int) []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html><html><head><title>bench</title><link rel=stylesheet href=/s.css><style>body{background:url(bg.png)}</style></head><body>\n")
	for i := 0; i < n; i++ {
		b.WriteString(`<p class="item">Item text that is not a link, with some words &amp; entities. <a href="/page/`)
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString(`.html">link</a> <img src="img/p.png" alt="picture"> <span style="background:url('s.png')">s</span></p>` + "\n")
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// BenchmarkRewriteHTML measures rewriting throughput (bytes of archived
// HTML per second): go test -run XXX -bench RewriteHTML ./gateway/
func BenchmarkRewriteHTML(b *testing.B) {
	doc := benchDoc(1000)
	rw, _ := NewRewriter("http://example.com/dir/page.html", "20140101")
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		rw.HTML(doc, nil, []byte("<div>banner</div>"))
	}
}

func TestRewriteLargeDocument(t *testing.T) {
	doc := benchDoc(20000) // about 3 MB
	rw, _ := NewRewriter("http://example.com/dir/page.html", "2014")
	out := rw.HTML(doc, nil, nil)
	if got, want := bytes.Count(out, []byte("/web/2014/http://example.com/")), 3*20000+2; got != want {
		t.Errorf("%d rewritten URLs, want %d", got, want)
	}
}

// TestOnlyFirstBaseCounts: the first <base href> is the document's base,
// for the links before it too, as in browsers; a later one moves nothing,
// nor does one in raw text (<noscript>, read by a browser that runs
// scripts) or a <template>.
func TestOnlyFirstBaseCounts(t *testing.T) {
	rw, err := NewRewriter("http://example.com/dir/page.html", "2014")
	if err != nil {
		t.Fatal(err)
	}
	got := string(rw.HTML([]byte(`<a href="w">w</a><noscript><base href="/n/"></noscript><template><base href="/t/"></template>`+
		`<BASE target="_top"><base HREF="/a&amp;b/"><a href="x">x</a><base href="/b/"><a href="y">y</a>`), nil, nil))
	for _, want := range []string{`<a href="/web/2014/http://example.com/a&amp;b/w">`, `<a href="/web/2014/http://example.com/a&amp;b/x">`,
		`<a href="/web/2014/http://example.com/a&amp;b/y">`, `<base HREF="/web/2014/http://example.com/a&amp;b/">`} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten %s\nlacks %s", got, want)
		}
	}
}

// TestBaseInTemplateIsInert checks that a <base> inside a <template>,
// which browsers ignore, does not set the document's base: the first
// <base> outside one does, for every link.
func TestBaseInTemplateIsInert(t *testing.T) {
	rw, err := NewRewriter("http://example.com/dir/page.html", "2014")
	if err != nil {
		t.Fatal(err)
	}
	got := string(rw.HTML([]byte(`<template><base href="http://tpl.example/"></template><a href="r">r</a><base href="/b/"><a href="s">s</a>`), nil, nil))
	for _, want := range []string{`<a href="/web/2014/http://example.com/b/r">`, `<a href="/web/2014/http://example.com/b/s">`} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten %s\nlacks %s", got, want)
		}
	}
}
