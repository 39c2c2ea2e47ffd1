package fidelityweb

import (
	"fmt"
	"strings"
)

// page returns page i's HTML.
func (s *Site) page(i int) string {
	next := (i + 1) % s.cfg.Pages
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Fidelity page %d</title>
<link rel="stylesheet" href="/static/site.css?v=2024.1">
<link rel="preload" as="fetch" href="/api/page-%d.json" crossorigin>
<link rel="icon" href="/img/icon.png?v=3">
<script type="module" src="/static/app.js?v=2024.1"></script>
</head><body data-page="%d">
<h1>Page %d of the fidelity sample</h1>
<p class="lead">Rendered in the site's web font, on a background image that two @imports away from the page's stylesheet.</p>
<div class="row">
<img src="/img/hero-%d.png?cb=%d" alt="hero" width="240" height="80">
<img src="/img/photo.png?w=240" srcset="/img/photo.png?w=240 1x, /img/photo-2x.png?w=480 2x" alt="photo" width="240" height="80">
<img src="/img/moved.png?v=1" alt="moved" width="240" height="80">
</div>
<div id="built" class="built">(the script builds this box)</div>
<div id="widget" class="widget">(a module imported with import() fills this)</div>
<div class="row"><img loading="lazy" src="/img/lazy-near-%d.png?v=1" alt="lazy near" width="240" height="80"></div>
<p><a href="/docs/notes.txt">notes (plain text)</a> · <a href="/docs/report.pdf">report (PDF)</a> ·
<a href="/old/%d.html">next page</a></p>
<div style="height: 3000px"></div>
<img loading="lazy" src="/img/lazy-far-%d.png?v=1" alt="lazy far" width="240" height="80">
</body></html>
`, i, i, i, i, i%5, i, i, next, i)
	return b.String()
}

// static are the site's stylesheets and scripts; SITE stands for the
// site's base URL.
var static = map[string]string{
	"/static/site.css": `@import url("theme.css?v=7");
h1 { font-family: "SiteFont", serif; color: #1d3557; }
.row img { margin: 4px; }
`,
	"/static/theme.css": `@import "fonts.css?family=SiteFont&v=7";
body { background: #f4efe6 url("/img/paper.png?v=7") repeat-x; margin: 16px; font: 16px/1.5 sans-serif; }
.lead { font-family: "SiteFont", serif; }
.built, .widget { border: 2px dashed #888; padding: 8px; margin: 8px 0; min-height: 3em; }
`,
	"/static/fonts.css": `@font-face { font-family: "SiteFont"; src: url("/static/font.ttf?v=7") format("truetype"); }
`,
	"/static/app.js": `import { render } from "/static/lib/render.js?v=2024.1";
import { fmt } from "SITE/static/lib/fmt.js?v=2024.1";
import "./lib/mark.js?v=2024.1";
const page = document.body.dataset.page;
fetch("/api/page-" + page + ".json?_=" + Date.now()).then((r) => r.json()).then((d) => {
  render(document.getElementById("built"), d.items.map(fmt));
});
import("./lib/widget.js?v=2024.1").then((m) => m.fill(document.getElementById("widget")));
`,
	"/static/lib/render.js": `export function render(el, items) {
  el.innerHTML = "<ul>" + items.map((t) => "<li>" + t + "</li>").join("") + "</ul>" +
    '<img src="/img/built.png?v=1" alt="built" width="240" height="80">';
}
`,
	"/static/lib/fmt.js": `export const fmt = (s) => s.toUpperCase();
`,
	"/static/lib/mark.js": `document.documentElement.classList.add("js");
`,
	"/static/lib/widget.js": `export function fill(el) {
  el.textContent = "widget loaded";
  const i = document.createElement("img");
  i.width = 240; i.height = 80; i.alt = "widget";
  i.src = "SITE/img/widget.png?v=1";
  el.appendChild(i);
  const badge = new Image(80, 80);
  badge.alt = "badge";
  badge.src = new URL("../../img/badge.png?v=2", import.meta.url);
  el.appendChild(badge);
  const w = new Worker("/static/worker.js?v=1");
  w.onmessage = (e) => { el.appendChild(document.createTextNode(" · " + e.data)); };
}
`,
	"/static/worker.js": `postMessage("worker ready");
`,
}

// pdf is a one-page PDF with a line of text.
var pdf = []byte(`%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >> endobj
4 0 obj << /Length 44 >> stream
BT /F1 18 Tf 20 70 Td (Archived report) Tj ET
endstream endobj
5 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj
trailer << /Root 1 0 R >>
%%EOF
`)
