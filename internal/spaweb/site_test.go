package spaweb

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestSiteServes checks that every route answers the shell, the feed ends
// after ScrollPages pages, a hostile page checks its target and the site
// counts what it answered by request URI.
func TestSiteServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := New(Config{ScrollPages: 2})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(s.Pages(), s.URL()+"/app/item-7") {
		if code, body := get(t, p); code != 200 || !strings.Contains(body, `src="/static/app.js"`) {
			t.Errorf("%s: %d, shell not served", p, code)
		}
	}
	for _, h := range s.HiddenPages() {
		if _, body := get(t, s.URL()+"/"); strings.Contains(body, strings.TrimPrefix(h, s.URL())) {
			t.Errorf("the HTML names %s, which only the script should", h)
		}
	}
	var page struct {
		Items []struct{ Href, Image string }
		Next  *string
	}
	code, body := get(t, s.URL()+"/api/feed?page=1")
	if err := json.Unmarshal([]byte(body), &page); code != 200 || err != nil || len(page.Items) != FeedItems || page.Next != nil {
		t.Errorf("last feed page: %d %v %q", code, err, body)
	}
	if code, _ := get(t, s.URL()+"/api/feed?page=2"); code != 404 {
		t.Errorf("feed page past the end: %d, want 404", code)
	}
	if code, _ := get(t, s.URL()+"/hostile/endless.json?page=5000"); code != 200 {
		t.Errorf("endless feed: %d", code)
	}
	if code, _ := get(t, s.HostileURL("internal", "file:///etc/passwd")); code != 400 {
		t.Errorf("internal page with a file: target: %d, want 400", code)
	}
	if n := s.Requests()["/api/feed?page=1"]; n != 1 {
		t.Errorf("counted %d requests of /api/feed?page=1, want 1", n)
	}
	s.Reset()
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d paths counted after Reset", n)
	}
}
