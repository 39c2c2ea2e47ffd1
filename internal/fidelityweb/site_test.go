package fidelityweb

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSite fetches what a page embeds and links to and checks the
// answers: types, the redirects, and the site's URL in scripts.
func TestSite(t *testing.T) {
	s := New(Config{Pages: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		path, ctype string
		status      int
		body        string
	}{
		{"/p/1.html", "text/html; charset=utf-8", 200, `<a href="/old/2.html">`},
		{"/p/3.html", "", 404, ""},
		{"/old/2.html", "", 301, ""},
		{"/img/moved.png?v=1", "", 301, ""},
		{"/img/new.png?v=1", "image/png", 200, "\x89PNG"},
		{"/static/site.css?v=2024.1", "text/css", 200, `@import url("theme.css?v=7")`},
		{"/static/app.js?v=2024.1", "text/javascript", 200, `from "` + s.URL() + `/static/lib/fmt.js?v=2024.1"`},
		{"/static/lib/widget.js?v=2024.1", "text/javascript", 200, `new URL("../../img/badge.png?v=2", import.meta.url)`},
		{"/static/worker.js?v=1", "text/javascript", 200, `postMessage("worker ready")`},
		{"/api/page-1.json?_=1700000000000", "application/json", 200, `"alpha 1"`},
		{"/static/font.ttf?v=7", "font/ttf", 200, ""},
		{"/docs/notes.txt", "text/plain; charset=utf-8", 200, "Plain-text notes"},
		{"/docs/report.pdf", "application/pdf", 200, "%PDF-1.4"},
	} {
		resp, err := client.Get(s.URL() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype) || !strings.Contains(string(b), c.body) {
			t.Errorf("%s: %d %q, want %d %q with %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.status, c.ctype, c.body)
		}
	}
	if got := len(s.Pages()); got != 6 {
		t.Errorf("%d URLs to load, want 3 pages and 3 more", got)
	}
	if s.Requests() != 13 {
		t.Errorf("counted %d requests, want 13", s.Requests())
	}
}
