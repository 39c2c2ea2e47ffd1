package gateway

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/webrefs"
)

// TestServedTable: the replay script the gateway serves holds the
// attribute table of internal/webrefs, once, and replay.js as written
// holds no table of its own (only the mark withTable fills).
func TestServedTable(t *testing.T) {
	if !bytes.Contains(replayJS, webrefs.TableJSON()) || bytes.Contains(replayJS, []byte(tableMark)) {
		t.Fatal("the served replay.js lacks the attribute table")
	}
	if bytes.Count(replayJSSource, []byte(tableMark)) != 1 {
		t.Fatalf("replay.js holds %s %d times", tableMark, bytes.Count(replayJSSource, []byte(tableMark)))
	}
	for _, own := range []string{"HTMLImageElement", "urlAttrs", `"poster"`, `"imagesrcset"`} {
		if bytes.Contains(replayJSSource, []byte(own)) {
			t.Errorf("replay.js names %s: a list of its own", own)
		}
	}
}

// tableRow is one attribute TestReplayJSAgreesWithServer sets, and what
// the server's rewriting makes of it.
type tableRow struct {
	Tag, Name, Val string
	Refresh        bool   // the element has http-equiv=refresh
	Markup         string // the tag as markup
	wantAttr       string // the value the server writes ("renamed:" + value for integrity)
	wantMarkup     string // the tag as the server rewrites it
}

// tableRows returns a row for each row of the attribute table (on a div
// for "*") and for attributes that hold no URL, each with what the
// server's HTML rewriting makes of it at page, replayed at ts.
func tableRows(t *testing.T, page, ts string) []tableRow {
	var rows []tableRow
	add := func(tag, name string, kind webrefs.Kind, css ...string) {
		r := tableRow{Tag: tag, Name: name, Val: "x.png"}
		extra := ""
		switch kind {
		case webrefs.Style:
			r.Val = "background:url(x.png)"
			if len(css) > 0 {
				r.Val = css[0]
			}
		case webrefs.Refresh:
			r.Val, r.Refresh, extra = "0; url=x.html", true, ` http-equiv="refresh"`
		case webrefs.Srcset:
			r.Val = "x.png 2x"
		}
		r.Markup = "<" + tag + extra + " " + name + `="` + r.Val + `">`
		rw, err := NewRewriter(page, ts)
		if err != nil {
			t.Fatal(err)
		}
		out := rw.HTML([]byte(r.Markup), nil, nil)
		r.wantMarkup = string(out)
		r.wantAttr = r.Val
		for _, a := range webrefs.ScanAttrs(out) {
			switch a.Key {
			case name:
				r.wantAttr = webrefs.AttrValue(out[a.ValStart:a.ValEnd])
			case "data-herod-integrity":
				r.wantAttr = "renamed:" + webrefs.AttrValue(out[a.ValStart:a.ValEnd])
			}
		}
		rows = append(rows, r)
	}
	for _, a := range webrefs.Table() {
		tag := a.Tag
		if tag == "*" {
			tag = "div"
		}
		add(tag, a.Name, a.Kind)
	}
	for _, css := range cssCases {
		add("div", "style", webrefs.Style, css)
	}
	add("div", "data", webrefs.None)
	add("a", "title", webrefs.None)
	add("meta", "content", webrefs.None) // no http-equiv
	add("div", "content", webrefs.None)
	return rows
}

// cssCases are style attributes on which replay.js's CSS scanner must
// find what webrefs.CSS finds.
var cssCases = []string{
	`background: URL( 'a.png' ) , url(b.png)`,
	`/* url(comment.png) */ background:url(c.png)`,
	`content: 'url(in-string.png)'; background: url(d.png)`,
	`background-image: image-set('e.png' 1x, url(f.png) 2x)`,
	`background-image: -webkit-image-set('g.png' 1x)`,
	`background: url(has space.png) url() url('')`,
	`background: url('h.png`,
	`background: url(i\).png)`,
	`mask: url(data:image/png;base64,AA==) url(#frag)`,
	`x: 'un\'quoted' url(j.png)`,
	`font: url(k.woff) /*`,
	"bad: 'line\nbreak' url(l.png)",
}

// tablePage is a page whose script sets each row's attribute with
// setAttribute, writes each row's markup as a textarea's innerHTML (whose
// value is then the markup as replay.js rewrote it), and prints both as
// JSON between BEGIN and END (which the script's text does not hold).
func tablePage(t *testing.T, rows []tableRow) string {
	js, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	return `<!doctype html><html><head><title>table</title></head><body><script>
var rows = ` + string(js) + `;
var out = rows.map(function (r) {
  var el = document.createElement(r.Tag);
  if (r.Refresh) {
    el.setAttribute("http-equiv", "refresh");
  }
  el.setAttribute(r.Name, r.Val);
  var ren = el.getAttribute("data-herod-integrity");
  var ta = document.createElement("textarea");
  ta.innerHTML = r.Markup;
  return [ren !== null ? "renamed:" + ren : el.getAttribute(r.Name), ta.value];
});
var pre = document.createElement("pre");
pre.textContent = "BE" + "GIN" + JSON.stringify(out) + "E" + "ND";
document.body.appendChild(pre);
</script></body></html>`
}

// TestReplayJSAgreesWithServer replays, in headless Chromium over a real
// gateway, a page that sets every attribute of the table (and a few that
// hold no URL) with setAttribute and writes each as markup: replay.js,
// working from the table the gateway serves it, must rewrite each as the
// server's HTML rewriting does (the same value; the same markup but for
// the origin replay.js writes in absolute URLs). It is skipped where no
// Chromium is installed.
func TestReplayJSAgreesWithServer(t *testing.T) {
	browser := browsertest.Find(t)
	const ts = "20210615000000"
	page := "http://example.com/table.html"
	rows := tableRows(t, page, ts)
	f := newFake()
	f.add(t, page, ts, 200, "text/html; charset=utf-8", tablePage(t, rows))
	_, content, _ := serveOrigins(t, f, func(c *Config) { c.Frameless = true })
	dom, _ := browser.Load(t, content+"/web/"+ts+"/"+page)
	_, rest, ok := strings.Cut(dom, "BEGIN")
	res, _, ok2 := strings.Cut(rest, "END")
	if !ok || !ok2 {
		t.Fatalf("the page printed no result:\n%s", dom)
	}
	var got [][2]string
	if err := json.Unmarshal([]byte(html.UnescapeString(res)), &got); err != nil || len(got) != len(rows) {
		t.Fatalf("result %q: %v", res, err)
	}
	for i, r := range rows {
		attr := strings.ReplaceAll(got[i][0], content, "")
		markup := strings.ReplaceAll(got[i][1], content, "")
		if attr != r.wantAttr {
			t.Errorf("setAttribute on %s %s=%q: replay.js %q, the server %q", r.Tag, r.Name, r.Val, attr, r.wantAttr)
		}
		if markup != r.wantMarkup {
			t.Errorf("markup %s: replay.js %s, the server %s", r.Markup, markup, r.wantMarkup)
		}
	}
}
