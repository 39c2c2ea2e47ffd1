package webrefs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
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
			for _, r := range JSRefs([]byte(tc.js), "example.org", tc.inline, nil) {
				if r.Use != Embed {
					t.Errorf("%q is not a requisite", r.URL)
				}
				got = append(got, r.URL)
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
	if n := len(JSRefs([]byte(js), "example.org", false, nil)); n != maxJSLiterals {
		t.Errorf("%d literals, want %d", n, maxJSLiterals)
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
		for _, r := range JSRefs(js, "example.org", inline, nil) {
			if r.Use != Embed || !strings.Contains(string(js), r.URL) {
				t.Fatalf("%q: ref %q", js, r.URL)
			}
		}
	})
}

// FuzzJSImports: the import scanner never panics, and every specifier it
// returns is a URL or a relative path written in the script.
func FuzzJSImports(f *testing.F) {
	for _, s := range []string{`import a from "./a.js?v=1";`, `export * from '../b.js'`, `import("./c.js")`,
		`import {x} from`, `import "`, `// import "./d.js"` + "\nimport './e.js'", `export{a}from"/f.js"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		ScanJS(js, func(r JSRef) {
			if r.Kind != StaticImport {
				return
			}
			if r.Span.Start < 0 || r.Span.End > len(js) || r.Span.Start > r.Span.End {
				t.Fatalf("%q: import at %v", js, r.Span)
			}
		})
	})
}

// TestJSImportsNoSpecifiers: import statements without semicolons or
// specifiers yield nothing (BenchmarkJSImportsNoSpecifiers measures that
// the scan stays linear in the script's size).
func TestJSImportsNoSpecifiers(t *testing.T) {
	if refs := JSRefs([]byte(strings.Repeat("import x\n", 1<<12)), "", false, nil); len(refs) != 0 {
		t.Fatalf("%d imports", len(refs))
	}
}

// BenchmarkJSImportsNoSpecifiers scans scripts of 9 KiB and 9 MiB of
// import statements without specifiers: equal MB/s means linear time.
//
//	go test ./internal/webrefs -run - -bench JSImportsNoSpecifiers
func BenchmarkJSImportsNoSpecifiers(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 20} {
		js := []byte(strings.Repeat("import x\n", n))
		b.Run(fmt.Sprint(len(js)>>10, "KiB"), func(b *testing.B) {
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				if refs := JSRefs(js, "", false, nil); len(refs) != 0 {
					b.Fatalf("%d imports", len(refs))
				}
			}
		})
	}
}

func TestRefreshURL(t *testing.T) {
	tests := map[string]string{
		"0; url=/a": "/a", "0;URL = '/b'": "/b", `3; "c.html"`: "c.html", "5": "", "0; url=\"": "", "1, /d": "/d",
	}
	for in, want := range tests {
		got := ""
		if sp, ok := RefreshURL(in); ok {
			got = in[sp.Start:sp.End]
		}
		if got != want {
			t.Errorf("refreshURL(%q) = %q, want %q", in, got, want)
		}
	}
}
