package browsertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestLoadReportsConsole loads a page that breaks its own
// Content-Security-Policy and throws an error of two lines, and checks
// that Load returns the DOM the script built and both messages whole.
func TestLoadReportsConsole(t *testing.T) {
	b := Find(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Security-Policy", "default-src 'self' 'unsafe-inline'")
		io.WriteString(w, `<p id=out></p><img src="http://blocked.invalid/x.png">
<script>document.getElementById("out").textContent = "ran"; throw new Error("first line\nsecond line");</script>`)
	}))
	defer srv.Close()
	dom, console := b.Load(t, srv.URL+"/")
	if !strings.Contains(dom, `<p id="out">ran</p>`) {
		t.Errorf("DOM without the script's work:\n%s", dom)
	}
	csp := slices.ContainsFunc(console, func(m string) bool { return strings.Contains(m, "blocked.invalid") })
	thrown := slices.ContainsFunc(console, func(m string) bool { return strings.Contains(m, "first line\nsecond line") })
	if !csp || !thrown {
		t.Errorf("console %q: CSP refusal %v, the two-line error %v", console, csp, thrown)
	}
}
