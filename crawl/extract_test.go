package crawl

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestExtractLinks(t *testing.T) {
	base, _ := url.Parse("http://Example.org/dir/page.html")
	tests := []struct {
		name, ctype, body string
		want              []string
	}{
		{name: "anchors and resolution", ctype: "text/html",
			body: `<a href="a.html">a</a><a href="/b#frag">b</a><a href="../c/./d">c</a><a href="HTTP://EXAMPLE.ORG:80/e">e</a><a href="#top">t</a><a href="mailto:x@y">m</a><a href="javascript:void(0)">j</a>`,
			want: []string{"http://example.org/b", "http://example.org/c/d", "http://example.org/dir/a.html", "http://example.org/e"}},
		{name: "embedded objects", ctype: "text/html; charset=utf-8",
			body: `<link rel=stylesheet href=s.css><script src="/j.js"></script><img src=i.png srcset="i2.png 2x, /i3.png 300w"><iframe src=f.html></iframe><embed src=e.swf><object data=o.bin></object><video src=v.mp4 poster=p.jpg><source src=v.webm></video><area href=map.html><body background=bg.gif>`,
			want: []string{"http://example.org/dir/bg.gif", "http://example.org/dir/e.swf", "http://example.org/dir/f.html",
				"http://example.org/dir/i.png", "http://example.org/dir/i2.png", "http://example.org/dir/map.html", "http://example.org/dir/o.bin",
				"http://example.org/dir/p.jpg", "http://example.org/dir/s.css", "http://example.org/dir/v.mp4", "http://example.org/dir/v.webm",
				"http://example.org/i3.png", "http://example.org/j.js"}},
		{name: "style", ctype: "text/html",
			body: `<style>@import "imp.css"; body { background: URL( 'bg1.png' ) } /* url(no.png) */ div{background:url(bg2.png)}</style><p style="background-image:url(&quot;bg3.png&quot;)">`,
			want: []string{"http://example.org/dir/bg1.png", "http://example.org/dir/bg2.png", "http://example.org/dir/bg3.png", "http://example.org/dir/imp.css"}},
		{name: "base href", ctype: "text/html",
			body: `<head><base href="http://other.example/x/"></head><a href="y">y</a>`,
			want: []string{"http://other.example/x/y"}},
		{name: "base in a template is inert", ctype: "text/html",
			body: `<template><base href="http://tpl.example/"></template><a href="r">r</a>`,
			want: []string{"http://example.org/dir/r"}},
		{name: "base in a template is inert (tree)", ctype: "text/html",
			body: `<svg></svg><template><base href="http://tpl.example/"></template><a href="r">r</a>`,
			want: []string{"http://example.org/dir/r"}},
		{name: "dedup and sort", ctype: "text/html",
			body: `<a href="/z">1</a><a href="/a">2</a><a href="/z#x">3</a><img src="/a">`,
			want: []string{"http://example.org/a", "http://example.org/z"}},
		{name: "css file", ctype: "text/css",
			body: `@import url("a.css"); @import 'b.css'; .x{background:url(data:image/png;base64,AAA)} .y{background:url(../up.gif)}`,
			want: []string{"http://example.org/dir/a.css", "http://example.org/dir/b.css", "http://example.org/up.gif"}},
		{name: "malformed html", ctype: "text/html",
			body: `<a href="/ok"><div><img src=/i.png></table></span><a href="http://[::1">bad</a><a href="http://h:8x/">bad port</a><p><a href=/also>`,
			want: []string{"http://example.org/also", "http://example.org/i.png", "http://example.org/ok"}},
		{name: "frameset", ctype: "text/html",
			body: `<html><frameset><frame src=a.html><frame src="/b.html"></frameset></html>`,
			want: []string{"http://example.org/b.html", "http://example.org/dir/a.html"}},
		{name: "tag cut by EOF is dropped", ctype: "text/html", body: `<a href="/x"<<img src=/i.png`, want: nil},
		{name: "meta refresh", ctype: "text/html",
			body: `<meta http-equiv="Refresh" content="0; URL='/moved'"><meta http-equiv=refresh content="5"><meta name=x content="1; url=/no">`,
			want: []string{"http://example.org/moved"}},
		{name: "not html", ctype: "image/png", body: `<a href="/x">`, want: nil},
		{name: "empty", ctype: "text/html", body: ``, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ExtractLinks(base, tc.ctype, []byte(tc.body))
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestExtractLinksCap(t *testing.T) {
	base, _ := url.Parse("http://example.org/")
	var b strings.Builder
	for i := range MaxLinks + 50 {
		b.WriteString(`<a href="/p/` + strconv.Itoa(i) + `">`)
	}
	if n := len(ExtractLinks(base, "text/html", []byte(b.String()))); n != MaxLinks {
		t.Fatalf("%d links, want %d", n, MaxLinks)
	}
}

func TestScopeCheck(t *testing.T) {
	sc := newScope(Config{MaxURLLen: 60, MaxRepeat: 2, MaxDepth: 5, AllowHosts: []string{"example.org", "127.0.0.1:8080"}, DenyHosts: []string{"bad.example.org"}})
	tests := []struct {
		in, want, kind string
	}{
		{"http://example.org/a", "http://example.org/a", ""},
		{"HTTP://WWW.Example.org:80/a/../b#f", "http://www.example.org/b", ""},
		{"http://example.org/a?b=1", "", KindDynamic},
		{"http://example.org/cgi-bin/x", "", KindDynamic},
		{"http://example.org/a/b/a/b/a", "", KindTrap},
		{"http://example.org/1/2/3/4/5/6", "", KindTrap},
		{"http://example.org/" + strings.Repeat("x", 60), "", KindTooLong},
		{"http://x.bad.example.org/", "", KindHostDenied},
		{"http://other.org/", "", KindHostDenied},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/", ""},
		{"http://127.0.0.1:8081/", "", KindHostDenied},
		{"ftp://example.org/", "", KindBadURL},
		{"/relative", "", KindBadURL},
	}
	for _, tc := range tests {
		got, kind := sc.check(tc.in)
		if got != tc.want || kind != tc.kind {
			t.Errorf("check(%q) = %q, %q; want %q, %q", tc.in, got, kind, tc.want, tc.kind)
		}
	}
	dyn := newScope(Config{AllowDynamic: true, MaxURLLen: 100, MaxRepeat: 3, MaxDepth: 10})
	if _, kind := dyn.check("http://example.org/cgi-bin/q?x=1"); kind != "" {
		t.Errorf("AllowDynamic refused: %s", kind)
	}
}

func TestTypeAllowed(t *testing.T) {
	allow := []string{"text/html", "image/*", "text/css", "application/javascript"}
	deny := []string{"video/*", "application/x-shockwave-flash"}
	tests := []struct {
		ct                    string
		byDefault, list, deny bool // stored by default, with allow, with deny
	}{
		{"text/html; charset=utf-8", true, true, true}, {"TEXT/HTML", true, true, true}, {"image/webp", true, true, true},
		{"text/css", true, true, true}, {"application/javascript", true, true, true},
		{"application/pdf", true, false, true}, {"text/plain; charset=utf-8", true, false, true},
		{"application/rss+xml", true, false, true}, {"application/json", true, false, true}, {"font/woff2", true, false, true},
		{"video/mp4", true, false, false}, {"application/x-shockwave-flash", true, false, false},
		{"", true, false, true}, {"garbage", true, false, true}, {"text/html; charset", true, true, true},
	}
	for _, tc := range tests {
		for i, cfg := range []Config{{}, {ContentTypes: allow}, {DenyTypes: deny}} {
			c := &Crawler{cfg: cfg.withDefaults()}
			want := []bool{tc.byDefault, tc.list, tc.deny}[i]
			if got := c.typeAllowed(tc.ct); got != want {
				t.Errorf("config %d: typeAllowed(%q) = %v", i, tc.ct, got)
			}
		}
	}
}

func TestNewLinks(t *testing.T) {
	tests := []struct{ cur, prev, want []string }{
		{[]string{"a", "b", "c"}, nil, []string{"a", "b", "c"}},
		{[]string{"a", "b", "c"}, []string{"b"}, []string{"a", "c"}},
		{[]string{"a", "c"}, []string{"a", "b", "c", "d"}, nil},
		{nil, []string{"a"}, nil},
	}
	for _, tc := range tests {
		if got := newLinks(tc.cur, tc.prev); !slices.Equal(got, tc.want) {
			t.Errorf("newLinks(%v, %v) = %v", tc.cur, tc.prev, got)
		}
	}
}

func FuzzExtractLinks(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/extract/*")
	more, _ := filepath.Glob("../internal/webrefs/testdata/*.html")
	seeds = append(seeds, more...)
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		ct := "text/html"
		if strings.HasSuffix(p, ".css") {
			ct = "text/css"
		}
		f.Add(ct, b)
	}
	f.Add("text/css", []byte("url("))
	f.Add("text/css", []byte("@import '"))
	f.Add("text/html", []byte("<style>url(\"</style><base href=::>"))
	base, _ := url.Parse("http://example.org/d/p")
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		got := ExtractLinks(base, ct, body)
		if !slices.IsSorted(got) || len(got) > MaxLinks {
			t.Fatalf("unsorted or too many: %d", len(got))
		}
		for i, l := range got {
			if i > 0 && got[i-1] == l {
				t.Fatalf("duplicate %q", l)
			}
			if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
				t.Fatalf("not http(s): %q", l)
			}
		}
	})
}

func FuzzScopeCheck(f *testing.F) {
	for _, s := range []string{"http://example.org/a/../b?x#y", "HTTP://EXAMPLE.ORG:80/", "http://[::1]:8080/cgi-bin/", "http://h/a/a/a/a/a", "ftp://x/", "%zz"} {
		f.Add(s)
	}
	sc := newScope(Config{}.withDefaults())
	f.Fuzz(func(t *testing.T, raw string) {
		c, kind := sc.check(raw)
		if kind != "" {
			if c != "" {
				t.Fatalf("refused %q but returned %q", raw, c)
			}
			return
		}
		c2, kind2 := sc.check(c)
		if kind2 != "" || c2 != c {
			t.Fatalf("check not idempotent: %q -> %q -> %q (%s)", raw, c, c2, kind2)
		}
		if hostOf(c) == "" {
			t.Fatalf("no host in %q", c)
		}
	})
}
