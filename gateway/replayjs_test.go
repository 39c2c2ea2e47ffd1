package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/browsertest"
)

// jsCase is one call a page's script makes in TestReplayJS, and the URL it
// must end up requesting.
type jsCase struct {
	Op   string `json:"op"`
	Arg  string `json:"arg"`
	Tag  string `json:"tag,omitempty"`
	Name string `json:"name,omitempty"`
	want string
}

// runHarness runs replay.js with node in testdata/replayjs/harness.js, a
// stand-in for a page replayed at pageURL (the archived URL archived, at
// timestamp ts, with document base baseURI or the page's), and returns the
// URL each case requested.
func runHarness(t *testing.T, node, pageURL, archived, ts, baseURI string, cases []jsCase) []string {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	// The script as the gateway serves it: with its attribute table.
	script := filepath.Join(t.TempDir(), "replay.js")
	if err := os.WriteFile(script, replayJS, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{filepath.Join("testdata", "replayjs", "harness.js"), script, pageURL, archived, ts}
	if baseURI != "" {
		args = append(args, baseURI)
	}
	cmd := exec.Command(node, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("harness output %q: %v", out, err)
	}
	return got
}

// nodeWithFetch returns node's path if it is installed and has the fetch
// API (Node 18 and later), or skips the test.
func nodeWithFetch(t *testing.T) string {
	if os.Getenv("HEROD_SKIP_NODE") != "" {
		t.Skip("HEROD_SKIP_NODE set")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	if err := exec.Command(node, "-e", "process.exit(typeof Request === 'function' ? 0 : 3)").Run(); err != nil {
		t.Skipf("node without the fetch API: %v", err)
	}
	return node
}

// TestReplayJS runs replay.js with node in a stand-in for a replayed page
// (testdata/replayjs/harness.js) at /web/20140101000000mp_/ of
// http://example.com/dir/page.html and checks the URL each script call
// ends up requesting; then on a page with a 17-digit timestamp, and on one
// with an archived <base href>. It is skipped where node is not installed.
func TestReplayJS(t *testing.T) {
	node := nodeWithFetch(t)
	const (
		gw   = "http://gw.test"
		at   = gw + "/web/20140101000000"
		page = "http://example.com/dir/page.html"
	)
	cases := []jsCase{
		{Op: "fetch", Arg: "data.json", want: at + "id_/http://example.com/dir/data.json"},
		{Op: "fetch", Arg: "/api/items?page=2#x", want: at + "id_/http://example.com/api/items?page=2#x"},
		{Op: "fetch", Arg: "https://cdn.example/lib.js", want: at + "id_/https://cdn.example/lib.js"},
		{Op: "fetch", Arg: "//cdn.example/a.js", want: at + "id_/http://cdn.example/a.js"},
		{Op: "fetch", Arg: gw + "/web/2010/http://example.com/old", want: gw + "/web/2010id_/http://example.com/old"},
		{Op: "fetch", Arg: "/web/2010mp_/http://example.com/old", want: gw + "/web/2010id_/http://example.com/old"},
		{Op: "fetch", Arg: "../../api/x", want: at + "id_/http://example.com/api/x"}, // "../" stays in the archived site
		{Op: "fetch", Arg: "?q=1", want: at + "id_/http://example.com/dir/page.html?q=1"},
		{Op: "fetch", Arg: "HTTP://Example.com:80/up", want: at + "id_/http://example.com/up"},
		{Op: "fetch", Arg: "data:text/plain,hi", want: "data:text/plain,hi"},
		{Op: "fetch", Arg: "blob:http://gw.test/1234", want: "blob:http://gw.test/1234"},
		{Op: "fetchRequest", Arg: "http://example.com/api", want: at + "id_/http://example.com/api"},
		{Op: "fetchRequest", Arg: gw + "/api/status", want: at + "id_/http://example.com/api/status"},
		{Op: "fetchPost", Arg: "http://example.com/api", want: "http://example.com/api"}, // a body is not rebuilt
		{Op: "xhr", Arg: "/api", want: at + "id_/http://example.com/api"},
		{Op: "xhr", Arg: "ftp://example.com/f", want: "ftp://example.com/f"},
		{Op: "pushState", Arg: "?tab=2", want: at + "mp_/http://example.com/dir/page.html?tab=2"},
		{Op: "pushState", Arg: "../../", want: at + "mp_/http://example.com/"},
		{Op: "replaceState", Arg: "/other", want: at + "mp_/http://example.com/other"},
		{Op: "open", Arg: "https://elsewhere.example/", want: at + "/https://elsewhere.example/"},
		{Op: "prop", Tag: "img", Name: "src", Arg: "/i.png", want: at + "/http://example.com/i.png"},
		{Op: "prop", Tag: "img", Name: "src", Arg: at + "/http://example.com/i.png", want: at + "/http://example.com/i.png"},
		{Op: "prop", Tag: "img", Name: "srcset", Arg: "a.png 1x, /b.png 2x", want: at + "/http://example.com/dir/a.png 1x, " + at + "/http://example.com/b.png 2x"},
		{Op: "prop", Tag: "img", Name: "srcset", Arg: "data:image/png;base64,iVBOR 1x,/b.png 2x", want: "data:image/png;base64,iVBOR 1x," + at + "/http://example.com/b.png 2x"},
		{Op: "prop", Tag: "img", Name: "srcset", Arg: "a.png 1x((,), b.png 2x", want: at + "/http://example.com/dir/a.png 1x((,), " + at + "/http://example.com/dir/b.png 2x"},
		{Op: "prop", Tag: "img", Name: "src", Arg: "../../i.png", want: at + "/http://example.com/i.png"},
		{Op: "prop", Tag: "iframe", Name: "src", Arg: "f.html", want: at + "if_/http://example.com/dir/f.html"},
		{Op: "prop", Tag: "video", Name: "src", Arg: "/v.webm", want: at + "/http://example.com/v.webm"},
		{Op: "prop", Tag: "video", Name: "poster", Arg: "p.jpg", want: at + "/http://example.com/dir/p.jpg"},
		{Op: "prop", Tag: "a", Name: "href", Arg: "#top", want: "#top"},
		{Op: "prop", Tag: "a", Name: "href", Arg: "javascript:void(0)", want: "javascript:void(0)"},
		{Op: "prop", Tag: "form", Name: "action", Arg: "/search", want: at + "/http://example.com/search"},
		{Op: "attr", Tag: "script", Name: "SRC", Arg: "/x.js", want: at + "/http://example.com/x.js"},
		{Op: "attr", Tag: "iframe", Name: "src", Arg: "/f", want: at + "if_/http://example.com/f"},
		{Op: "attr", Tag: "object", Name: "data", Arg: "/o.swf", want: at + "/http://example.com/o.swf"},
		{Op: "attr", Tag: "div", Name: "data", Arg: "/not-a-url", want: "/not-a-url"},
		{Op: "attr", Tag: "div", Name: "class", Arg: "/x", want: "/x"},
		{Op: "attr", Tag: "source", Name: "srcset", Arg: "/s.webp", want: at + "/http://example.com/s.webp"},
	}
	check := func(name string, got []string, cases []jsCase) {
		for i, c := range cases {
			if got[i] != c.want {
				t.Errorf("%s: %s %s %s %q:\n got %s\nwant %s", name, c.Op, c.Tag, c.Name, c.Arg, got[i], c.want)
			}
		}
	}
	check("page", runHarness(t, node, at+"mp_/"+page, page, "20140101000000", "", cases), cases)

	// The gateway accepts up to 17 digits (milliseconds) and keeps them.
	const at17 = gw + "/web/20140101000000123"
	long := []jsCase{
		{Op: "fetch", Arg: "rel.json", want: at17 + "id_/http://example.com/dir/rel.json"},
		{Op: "pushState", Arg: "?tab=2", want: at17 + "/http://example.com/dir/page.html?tab=2"},
		{Op: "prop", Tag: "img", Name: "src", Arg: at17 + "/http://example.com/i.png", want: at17 + "/http://example.com/i.png"},
	}
	check("17 digits", runHarness(t, node, at17+"/"+page, page, "20140101000000123", "", long), long)

	// An archived <base href> (rewritten by the server) moves both
	// relative and root-relative URLs to its site.
	based := []jsCase{
		{Op: "fetch", Arg: "/api", want: at + "id_/http://static.example.net/api"},
		{Op: "fetch", Arg: "rel", want: at + "id_/http://static.example.net/app/rel"},
	}
	check("base", runHarness(t, node, at+"/"+page, page, "20140101000000", at+"/http://static.example.net/app/", based), based)
}

// appPage is an archived page whose scripts fetch, XHR and add an image
// after load, each with a URL the server-side rewriting cannot see.
const appPage = `<!DOCTYPE html><html><head><title>app</title><script>
document.addEventListener("DOMContentLoaded", function () {
  fetch("http://example.com/api/data.json").then(function (r) { return r.text(); }).then(function (t) {
    document.getElementById("fetch").textContent = "fetch:" + t;
  }, function (e) { document.getElementById("fetch").textContent = "fetch failed"; });
  var x = new XMLHttpRequest();
  x.open("GET", "https://example.com/xhr.txt");
  x.onload = function () { document.getElementById("xhr").textContent = "xhr:" + x.responseText; };
  x.onerror = function () { document.getElementById("xhr").textContent = "xhr failed"; };
  x.send();
  var i = document.createElement("img");
  i.onload = function () { document.getElementById("img").textContent = "img:" + i.naturalWidth; };
  i.onerror = function () { document.getElementById("img").textContent = "img failed"; };
  i.src = "/pixel.png";
  document.getElementById("box").innerHTML = '<img id="inner" src="/pixel.png">';
  var inner = document.getElementById("inner");
  inner.onload = function () { document.getElementById("inner-out").textContent = "inner:" + inner.naturalWidth; };
  inner.onerror = function () { document.getElementById("inner-out").textContent = "inner failed"; };
  history.pushState(null, "", "/app.html?tab=2");
  document.getElementById("loc").textContent = "loc:" + location.pathname + location.search;
});
</script></head><body><p id="fetch"></p><p id="xhr"></p><p id="img"></p><p id="loc"></p><div id="box"></div><p id="inner-out"></p></body></html>`

// pixel is a 1x1 PNG.
const pixel = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa75\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"

// TestReplayJSInBrowser replays appPage in headless Chromium over a real
// gateway and checks that what its scripts asked for came from the
// archive: a fetch and an XHR of absolute URLs (which the
// Content-Security-Policy would block), an image whose src a
// script set, a pushState that keeps the address inside the archive, and
// an image in markup a script wrote (innerHTML, rewritten by the script;
// TestScriptedPagesInBrowser has a page for each of the other ways).
// It is skipped where no Chromium is installed.
func TestReplayJSInBrowser(t *testing.T) {
	browser := browsertest.Find(t)
	f := newFake()
	f.add(t, "http://example.com/app.html", "20210615000000", 200, "text/html; charset=utf-8", appPage)
	f.add(t, "http://example.com/api/data.json", "20210615000001", 200, "application/json", `"DATA"`)
	f.add(t, "https://example.com/xhr.txt", "20210615000002", 200, "text/plain", "XHR")
	f.add(t, "http://example.com/pixel.png", "20210615000003", 200, "image/png", pixel)
	// Frameless, so that the browser's DOM is the replayed page's.
	_, content, log := serveOrigins(t, f, func(c *Config) { c.Frameless = true })
	dom, console := browser.Load(t, content+"/web/20210615000000/http://example.com/app.html")
	if len(console) != 0 {
		t.Errorf("console: %q", console) // CSP refusals, uncaught errors
	}
	for _, want := range []string{
		`<p id="fetch">fetch:"DATA"</p>`,
		`<p id="xhr">xhr:XHR</p>`,
		`<p id="img">img:1</p>`,
		`<p id="loc">loc:/app.html?tab=2</p>`,
		`<p id="inner-out">inner:1</p>`, // markup a script wrote
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("replayed page lacks %s\n%s", want, dom)
		}
	}
	requested := log.uris("content")
	for _, want := range []string{
		"/static/replay.js?v=" + replayJSHash,
		"/web/20210615000000id_/http://example.com/api/data.json", // fetch: the archived bytes
		"/web/20210615000000id_/https://example.com/xhr.txt",
		"/web/20210615000000/http://example.com/pixel.png", // the images a script set and wrote
	} {
		if !slices.Contains(requested, want) {
			t.Errorf("the browser did not request %s; it requested %q", want, requested)
		}
	}
}
