package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRedirectFollowedInArchive: a page reached through a redirect is
// found from either URL. Over real HTTP, a client that follows
// redirects asks for the redirecting URL at the redirect's own timestamp
// D and gets the target's capture made seconds after D by the same crawl
// (not the target's older capture); at a later date it gets the target
// as of that date; with no capture of the target after the redirect it
// gets the target's newest capture before D.
func TestRedirectFollowedInArchive(t *testing.T) {
	a := newFake()
	a.add(t, "http://example.com/old", "20210101000000", 301, "text/html", "moved", "Location", "/new#top")
	a.add(t, "http://example.com/new", "20201201000000", 200, "text/html", "<p>december page</p>")
	a.add(t, "http://example.com/new", "20210101000004", 200, "text/html", "<p>the page the redirect led to</p>")
	a.add(t, "http://example.com/new", "20210301000000", 200, "text/html", "<p>march page</p>")
	a.add(t, "http://example.com/gone", "20210101000000", 302, "text/html", "", "Location", "http://example.com/elsewhere")
	a.add(t, "http://example.com/elsewhere", "20201201000000", 200, "text/html", "<p>only an older capture</p>")
	_, content, _ := serveOrigins(t, a)
	for _, tc := range []struct{ path, want, final string }{
		{"/web/20210101000000/http://example.com/old", "the page the redirect led to", "/web/20210101000004/http://example.com/new"},
		{"/web/20210101000000id_/http://example.com/old", "the page the redirect led to", "/web/20210101000004id_/http://example.com/new"},
		{"/web/20210101000004/http://example.com/new", "the page the redirect led to", "/web/20210101000004/http://example.com/new"},
		{"/web/20210401/http://example.com/old", "march page", "/web/20210401/http://example.com/new"},
		{"/web/20210101000000/http://example.com/gone", "only an older capture", "/web/20210101000000/http://example.com/elsewhere"},
	} {
		resp, err := http.Get(content + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %.200q, want %q", tc.path, resp.StatusCode, b, tc.want)
		}
		if got := resp.Request.URL.Path; got != tc.final {
			t.Errorf("%s: ended at %s, want %s", tc.path, got, tc.final)
		}
	}
	// The redirect itself keeps its status and the fragment of its Location.
	w := get(t, newServer(t, a), "/web/20210101000000/http://example.com/old")
	if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/web/20210101000004/http://example.com/new#top" {
		t.Errorf("redirect: %d Location %q", w.Code, w.Header().Get("Location"))
	}
}
