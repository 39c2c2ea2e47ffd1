package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestNonHTMLReplayedAsIs: captures of the types the crawler stores by
// default besides HTML and CSS (PDF, plain text, XML and RSS, JSON,
// fonts, media) replay with their archived type and their bytes
// unchanged, in the default mode and in id_, under the sandboxing
// policy, and none is a download but for executables.
func TestNonHTMLReplayedAsIs(t *testing.T) {
	a := newFake()
	cases := []struct{ path, ctype, body string }{
		{"/doc.pdf", "application/pdf", "%PDF-1.4\n<a href=\"/x\">not a link</a>\n%%EOF"},
		{"/notes.txt", "text/plain; charset=utf-8", "see http://example.com/other and <a href=/x>"},
		{"/feed.xml", "application/rss+xml", `<?xml version="1.0"?><rss><channel><link>http://example.com/</link></channel></rss>`},
		{"/data.xml", "text/xml", `<a href="/x"/>`},
		{"/api.json", "application/json", `{"url":"http://example.com/x","n":1}`},
		{"/font.woff2", "font/woff2", "wOF2\x00\x01\x00\x00binary"},
		{"/clip.mp4", "video/mp4", "\x00\x00\x00\x18ftypmp42"},
	}
	for _, c := range cases {
		a.add(t, "http://example.com"+c.path, "20210101000000", 200, c.ctype, c.body)
	}
	s := newServer(t, a)
	for _, c := range cases {
		for _, mod := range []string{"", "id_", "im_"} {
			w := get(t, s, "/web/20210101000000"+mod+"/http://example.com"+c.path)
			if w.Code != http.StatusOK || w.Body.String() != c.body {
				t.Errorf("%s %s: %d %q, want the archived bytes", mod, c.path, w.Code, w.Body)
			}
			if got := w.Header().Get("Content-Type"); got != c.ctype {
				t.Errorf("%s %s: Content-Type %q, want %q", mod, c.path, got, c.ctype)
			}
			if d := w.Header().Get("Content-Disposition"); d != "" {
				t.Errorf("%s %s: Content-Disposition %q", mod, c.path, d)
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
				t.Errorf("%s %s: not sandboxed: %q", mod, c.path, csp)
			}
		}
	}
}
