package gateway

import (
	"testing"

	"github.com/herod-archive/herod/internal/webrefs"
)

// TestRewriteJS checks which module specifiers JS rewrites and how it
// routes dynamic import() through the replay script.
func TestRewriteJS(t *testing.T) {
	const (
		at   = "/web/2021"
		hook = importHook + `"http://example.com/js/app.js",`
	)
	for _, c := range []struct{ in, want string }{
		{`import { a } from "http://example.com/a.js";`, `import { a } from "` + at + `/http://example.com/a.js";`},
		{`import b from '/b.js'`, `import b from '` + at + `/http://example.com/b.js'`},
		{"import {\n  x,\n  y as z\n} from \"//cdn.example/x.js\";", "import {\n  x,\n  y as z\n} from \"" + at + "/http://cdn.example/x.js\";"},
		{`import * as ns from "https://cdn.example/ns.js"`, `import * as ns from "` + at + `/https://cdn.example/ns.js"`},
		{`import "/side.js";`, `import "` + at + `/http://example.com/side.js";`},
		{`export * from "/re.js";`, `export * from "` + at + `/http://example.com/re.js";`},
		{`export { a as b } from "/re.js";`, `export { a as b } from "` + at + `/http://example.com/re.js";`},
		// Relative specifiers already resolve inside the archive; bare
		// ones are the import map's.
		{`import a from "./a.js"; import b from "../b.js"; import c from "lodash";`, `import a from "./a.js"; import b from "../b.js"; import c from "lodash";`},
		// Not imports.
		{`var s = "copied from \"/docs\""; x.import("/y"); myimport("/z");`, `var s = "copied from \"/docs\""; x.import("/y"); myimport("/z");`},
		{`var from = "/a"; important("/b")`, `var from = "/a"; important("/b")`},
		// Dynamic import: every form, with the script's archived URL.
		{`import("./lazy.js")`, hook + `"./lazy.js")`},
		{`x = await import ( "/m.js", { with: { type: "json" } })`, `x = await ` + hook + ` "/m.js", { with: { type: "json" } })`},
		{`load(import(u)).then(f)`, `load(` + hook + `u)).then(f)`},
		{`import.meta.url`, `import.meta.url`},
		{`nothing to see`, `nothing to see`},
	} {
		rw, err := NewRewriter("http://example.com/js/app.js", "2021")
		if err != nil {
			t.Fatal(err)
		}
		if got := string(rw.JS([]byte(c.in))); got != c.want {
			t.Errorf("JS(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestRewriteInlineScripts checks that HTML rewrites the imports of inline
// scripts, and leaves data blocks and templates alone.
func TestRewriteInlineScripts(t *testing.T) {
	rw, err := NewRewriter("http://example.com/dir/page.html", "2021")
	if err != nil {
		t.Fatal(err)
	}
	in := `<script type=module>import a from "/a.js";</script>` +
		`<script>import("/b.js")</script>` +
		`<script type="application/json">{"import": "from \"/c.js\""}</script>` +
		`<template><script type=module>import d from "/d.js";</script></template>`
	want := `<script type=module>import a from "/web/2021/http://example.com/a.js";</script>` +
		`<script>` + importHook + `"http://example.com/dir/page.html","/b.js")</script>` +
		`<script type="application/json">{"import": "from \"/c.js\""}</script>` +
		`<template><script type=module>import d from "/d.js";</script></template>`
	if got := string(rw.HTML([]byte(in), nil, nil)); got != want {
		t.Errorf("HTML\n got %s\nwant %s", got, want)
	}
}

// FuzzRewriteJS checks that JS never fails and keeps a script without
// imports byte for byte.
func FuzzRewriteJS(f *testing.F) {
	f.Add(`import a from "/a.js"; import("./b.js")`)
	f.Add(`export * from '//c/d.js'`)
	f.Add(`var x = 1;`)
	f.Fuzz(func(t *testing.T, s string) {
		rw, err := NewRewriter("http://example.com/js/app.js", "2021")
		if err != nil {
			t.Fatal(err)
		}
		out := rw.JS([]byte(s))
		imports := false
		webrefs.ScanJS([]byte(s), func(r webrefs.JSRef) {
			imports = imports || r.Kind == webrefs.StaticImport || r.Kind == webrefs.DynamicImport
		})
		if !imports && string(out) != s {
			t.Errorf("JS changed a script without imports: %q -> %q", s, out)
		}
	})
}

// TestRewriteJSLocation: the scripts' references to the document's
// location become the replay script's stand-in (locationName), a local
// variable named location with them; property names, object keys,
// strings, comments and a worker's script keep theirs.
func TestRewriteJSLocation(t *testing.T) {
	rw, err := NewRewriter("http://example.com/app/", "2021")
	if err != nil {
		t.Fatal(err)
	}
	L := locationName
	for in, want := range map[string]string{
		`const p = location.pathname;`:                                          `const p = ` + L + `.pathname;`,
		`window.location.href = "/x"; document.location.hash`:                   L + `.href = "/x"; ` + L + `.hash`,
		`if (location.pathname === "/") history.pushState({}, "", "/app/home")`: `if (` + L + `.pathname === "/") history.pushState({}, "", "/app/home")`,
		`function f(location) { return location.search }`:                       `function f(` + L + `) { return ` + L + `.search }`,
		`a.location; o = {location: 1}; x?.location; top.location`:              `a.location; o = {location: 1}; x?.location; top.location`,
		`"location.pathname"; // location` + "\n" + `/location/.test(s)`:        `"location.pathname"; // location` + "\n" + `/location/.test(s)`,
		"`${location.pathname}`":                                                "`${" + L + ".pathname}`",
		`a.window.location; location = "/next"`:                                 `a.window.location; ` + L + ` = "/next"`,
		`import("./m.js").then(() => location.hash)`:                            importHook + `"http://example.com/app/",` + `"./m.js").then(() => ` + L + `.hash)`,
	} {
		if got := string(rw.JS([]byte(in))); got != want {
			t.Errorf("JS(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	worker := *rw
	worker.Worker = true
	if in := `postMessage(location.href)`; string(worker.JS([]byte(in))) != in {
		t.Errorf("a worker's script: %q", worker.JS([]byte(in)))
	}
	if got, want := string(worker.JS([]byte(`import "/dep.js"; location.href`))), `import "/web/2021wk_/http://example.com/dep.js"; location.href`; got != want {
		t.Errorf("a worker's module: %q, want %q", got, want)
	}
}
