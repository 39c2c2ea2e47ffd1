package gateway

import (
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/browsertest"
)

// scriptedTS is when TestScriptedPagesInBrowser's site was archived.
const scriptedTS = "20210615000000"

// archiveScripted adds testdata/scripted to f as the site
// http://example.com/ archived at scriptedTS, with the resources its
// pages' scripts ask for.
func archiveScripted(t *testing.T, f *fakeArchive) {
	t.Helper()
	root := filepath.Join("testdata", "scripted")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		ctype := mime.TypeByExtension(path.Ext(p))
		f.add(t, "http://example.com/"+filepath.ToSlash(rel), scriptedTS, 200, ctype, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	next, err := os.ReadFile(filepath.Join(root, "next.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://example.com/next.html?via=href", "http://example.com/next.html?via=assign",
		"http://example.com/next.html?via=replace", "https://example.com/next.html?via=window"} {
		f.add(t, u, scriptedTS, 200, "text/html; charset=utf-8", string(next))
	}
	f.add(t, "http://example.com/api/data.json", scriptedTS, 200, "application/json", `"DATA"`)
	f.add(t, "http://example.com/api/xhr.txt", scriptedTS, 200, "text/plain", "XHR")
	f.add(t, "http://example.com/collect?e=view", scriptedTS, 204, "", "")
	for _, img := range []string{"w", "i", "bg", "a", "s", "s2"} {
		f.add(t, "http://example.com/img/"+img+".png", scriptedTS, 200, "image/png", pixel)
	}
	f.add(t, "https://example.com/img/o.png", scriptedTS, 200, "image/png", pixel)
}

// TestScriptedPagesInBrowser replays, in headless Chromium over a real
// gateway, one page for each way a script makes a URL the server-side
// rewriting cannot see (testdata/scripted): static module imports of
// absolute and root-relative URLs and dynamic import() (in a module file
// and inline), fetch and XHR, location assignments, markup written with
// innerHTML, outerHTML, insertAdjacentHTML and document.write, Worker,
// module Worker and SharedWorker, sendBeacon. For each it checks what the
// page's scripts achieved (the DOM), that every URL they made was asked of
// the content origin under /web/ (the archive), and that the browser
// refused nothing: a URL left unrewritten would have been blocked by the
// content policy (a console message), not fetched live, so the content
// origin's log and the console together show that nothing left the
// gateway. It is skipped where no Chromium is installed.
func TestScriptedPagesInBrowser(t *testing.T) {
	browser := browsertest.Find(t)
	f := newFake()
	archiveScripted(t, f)
	_, content, log := serveOrigins(t, f, func(c *Config) { c.Frameless = true })
	at := "/web/" + scriptedTS
	for _, tc := range []struct {
		page     string
		dom      []string // in the DOM the browser ends with
		requests []string // asked of the content origin
	}{
		{"modules.html", []string{"static:ABC", "dynamic:L2", "inline:AL"}, []string{
			at + "/http://example.com/js/main.js",
			at + "/http://example.com/js/a.js",         // absolute static import
			at + "/http://example.com/js/b.js",         // root-relative
			at + "/http://example.com/js/c.js",         // relative
			at + "/http://example.com/js/a2.js",        // a protocol-relative re-export
			at + "/http://example.com/js/sub/lazy2.js", // import() relative to the module
			at + "/http://example.com/js/lazy.js",      // inline import() of a root-relative URL
		}},
		{"fetch.html", []string{`fetch:"DATA"`, "xhr:XHR"}, []string{
			at + "id_/http://example.com/api/data.json",
			at + "id_/http://example.com/api/xhr.txt",
		}},
		{"markup.html", []string{"inner:ok", "outer:ok", "adjacent:ok", "write:ok", "srcset:ok"}, []string{
			at + "/http://example.com/written.css",   // document.write
			at + "/http://example.com/js/written.js", // document.writeln
			at + "/http://example.com/img/w.png",     // document.write
			at + "/http://example.com/img/i.png",     // innerHTML
			at + "/http://example.com/img/bg.png",    // innerHTML, a style attribute
			at + "/https://example.com/img/o.png",    // outerHTML
			at + "/http://example.com/img/a.png",     // insertAdjacentHTML, relative
			at + "/http://example.com/img/s.png",     // srcset
			at + "/http://example.com/imp.css",       // a written <style>'s @import
		}},
		{"workers.html", []string{"worker:W:hi", "module-worker:MA:hi", "shared:S:hi"}, []string{
			at + "wk_/http://example.com/js/worker.js", // workers keep their own location
			at + "wk_/http://example.com/js/mworker.js",
			at + "wk_/http://example.com/js/shared.js",
			at + "wk_/http://example.com/js/a.js", // the module worker's import
		}},
		{"beacon.html", []string{"beacon:truetrue"}, []string{
			at + "id_/http://example.com/collect?e=view",
			at + "id_/http://example.com/collect?e=root",
		}},
		// A navigation's next document is outside what the browser dumps
		// (and cross-document navigations stall --dump-dom): each runs in
		// a frame, and the frames' next requests tell where they went.
		{"navigations.html", nil, []string{
			at + "if_/http://example.com/next.html?via=href",    // location.href =
			at + "if_/http://example.com/next.html?via=assign",  // location.assign of a root-relative URL
			at + "if_/http://example.com/next.html?via=replace", // location.replace
			at + "if_/https://example.com/next.html?via=window", // window.location =
		}},
	} {
		t.Run(tc.page, func(t *testing.T) {
			// Workers run in real time, outside the browser's virtual
			// time: on a loaded machine their answers can miss the DOM
			// dump. A page whose DOM lacks a result is loaded again (up
			// to three times); the requests and console of the last load
			// are checked.
			var dom string
			var console []string
			var before int
			for try := 0; try < 3; try++ {
				before = len(log.uris("content"))
				dom, console = browser.Load(t, content+at+"/http://example.com/"+tc.page)
				if !slices.ContainsFunc(tc.dom, func(w string) bool { return !strings.Contains(dom, w) }) {
					break
				}
			}
			for _, m := range console {
				t.Errorf("console: %s", m) // CSP refusals, uncaught errors
			}
			for _, want := range tc.dom {
				if !strings.Contains(dom, want) {
					t.Errorf("the page lacks %q\n%s", want, dom)
				}
			}
			requested := log.uris("content")[before:]
			for _, want := range tc.requests {
				if !slices.Contains(requested, want) {
					t.Errorf("the browser did not request %s", want)
				}
			}
			for _, r := range requested {
				if !strings.HasPrefix(r, "/web/") && !strings.HasPrefix(r, replayJSPath+"?") && r != "/favicon.ico" {
					t.Errorf("a request outside the archive: %s", r)
				}
			}
			if t.Failed() {
				t.Logf("requested: %q", requested)
			}
		})
	}
}
