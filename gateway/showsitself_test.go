package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestPDFFrame checks the way a PDF capture is framed: the framed page's
// frame has no sandbox attribute and shows the archived bytes (id_),
// which the content origin sends sandboxed without scripts; the replay of
// the PDF followed in the sandboxed frame (a link) is a page asking the
// framed page to reframe it; elsewhere the PDF is replayed as archived.
func TestPDFFrame(t *testing.T) {
	f := sampleArchive(t)
	const pdf = "http://example.com/report.pdf"
	f.add(t, pdf, "20210101000000", 200, "application/pdf", "%PDF-1.4\n%%EOF\n")
	s := newServer(t, f)
	framed := getUI(t, s, "/web/2021/"+pdf).Body.String()
	want := `<iframe id="herod-frame" title="archived page" src="http://content.test/web/2021id_/` + pdf + `" allow="fullscreen"`
	if !strings.Contains(framed, want) {
		t.Errorf("framed PDF page lacks %s\n%s", want, framed)
	}
	html := getUI(t, s, "/web/2021/"+page).Body.String()
	if !strings.Contains(html, `" sandbox="`+frameSandbox+`"`) {
		t.Errorf("framed HTML page lost its sandbox\n%s", html)
	}
	raw := get(t, s, "/web/2021id_/"+pdf, "Sec-Fetch-Dest", "iframe")
	if csp := raw.Header().Get("Content-Security-Policy"); raw.Code != http.StatusOK || !strings.Contains(csp, "; sandbox ") ||
		strings.Contains(csp, "allow-scripts") || !strings.HasPrefix(raw.Body.String(), "%PDF") {
		t.Errorf("id_ PDF: %d CSP %q", raw.Code, csp)
	}
	inFrame := get(t, s, "/web/2021/"+pdf, "Sec-Fetch-Dest", "iframe")
	body := inFrame.Body.String()
	if inFrame.Code != http.StatusOK || !strings.Contains(body, `<meta name="herod-reopen" content="`+uiOrigin+`/web/2021/`+pdf+`" data-how="reframe">`) ||
		strings.Contains(body, "%PDF") {
		t.Errorf("PDF followed in the frame: %d\n%s", inFrame.Code, body)
	}
	for _, hdr := range [][]string{nil, {"Sec-Fetch-Dest", "empty"}} {
		if w := get(t, s, "/web/2021/"+pdf, hdr...); !strings.HasPrefix(w.Body.String(), "%PDF") {
			t.Errorf("PDF replayed with %v: %q", hdr, w.Body.String())
		}
	}
	fl := newServer(t, f, func(c *Config) { c.Frameless = true })
	if w := get(t, fl, "/web/2021/"+pdf, "Sec-Fetch-Dest", "iframe"); !strings.HasPrefix(w.Body.String(), "%PDF") {
		t.Errorf("frameless PDF: %q", w.Body.String())
	}
}

// TestNotArchivedInFrame checks that a page not archived, reached by a
// link in the content frame, asks the framed page to show the UI's own
// page for it (the list of dates, a 404 with its suggestions) in its
// place; a frame inside a replayed page (if_) keeps its 404.
func TestNotArchivedInFrame(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	const missing = "http://example.com/missing"
	w := get(t, s, "/web/2021/"+missing, "Sec-Fetch-Dest", "iframe")
	if want := `<meta name="herod-reopen" content="` + uiOrigin + `/web/*/` + missing + `" data-how="replace">`; w.Code != http.StatusNotFound ||
		!strings.Contains(w.Body.String(), want) {
		t.Errorf("not archived, in the frame: %d, want %s\n%s", w.Code, want, w.Body.String())
	}
	for _, c := range []struct{ target, dest string }{{"/web/2021if_/" + missing, "iframe"}, {"/web/2021/" + missing, ""}} {
		if w := get(t, s, c.target, "Sec-Fetch-Dest", c.dest); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), `<meta name="herod-reopen"`) {
			t.Errorf("%s (%q): %d, reopens", c.target, c.dest, w.Code)
		}
	}
	ui := getUI(t, s, "/web/*/"+missing)
	if ui.Code != http.StatusNotFound || !strings.Contains(ui.Body.String(), "/web/*/https://example.com/missing") {
		t.Errorf("the UI's page: %d\n%s", ui.Code, ui.Body.String())
	}
}
