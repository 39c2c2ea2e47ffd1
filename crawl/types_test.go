package crawl

import (
	"context"
	"slices"
	"testing"
)

// TestDefaultTypes: with the default Config every type is stored up to
// MaxBody (PDF, plain text, XML and RSS, JSON, fonts, media) as served;
// DenyTypes refuses what it lists, and ContentTypes, when set, is an
// allow list.
func TestDefaultTypes(t *testing.T) {
	types := map[string]string{
		"/doc.pdf": "application/pdf", "/notes.txt": "text/plain; charset=utf-8", "/feed.rss": "application/rss+xml",
		"/data.xml": "text/xml", "/api.json": "application/json", "/font.woff2": "font/woff2", "/clip.mp4": "video/mp4",
		"/page.html": "text/html",
	}
	s := newSite(t, nil)
	var seeds []string
	for p, ct := range types {
		s.setPage(p, page{status: 200, ctype: ct, body: "body of " + p})
		seeds = append(seeds, s.url(p))
	}
	for _, tc := range []struct {
		name        string
		allow, deny []string
		refused     []string
	}{
		{"default", nil, nil, nil},
		{"deny", nil, []string{"video/*", "application/json"}, []string{"/api.json", "/clip.mp4"}},
		{"allow", []string{"text/*"}, []string{"text/xml"}, []string{"/api.json", "/clip.mp4", "/data.xml", "/doc.pdf", "/feed.rss", "/font.woff2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(newClock())
			cfg.ContentTypes, cfg.DenyTypes = tc.allow, tc.deny
			a := newMemArchive()
			c, _ := startCrawler(t, t.TempDir(), cfg, a)
			if err := c.Add(context.Background(), seeds); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, c)
			for p, ct := range types {
				refused := slices.Contains(tc.refused, p)
				if n := a.count(s.url(p)); n != 1 {
					t.Errorf("%s (%s): %d versions, want 1 (refused types are recorded without their body)", p, ct, n)
					continue
				}
				if got := a.truncated(s.url(p)) != ""; got != refused {
					t.Errorf("%s (%s): recorded without its body %v, refused %v", p, ct, got, refused)
					continue
				}
				if !refused {
					v := a.versions[s.url(p)][0]
					if string(v.Body) != "body of "+p || v.Header.Get("Content-Type") != ct {
						t.Errorf("%s stored as %q %q", p, v.Header.Get("Content-Type"), v.Body)
					}
				}
			}
			if n := c.Stats().ErrorsByKind[KindContentType]; n != int64(len(tc.refused)) {
				t.Errorf("content_type counted %d times, want %d", n, len(tc.refused))
			}
		})
	}
}
