package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/testwait"
)

// nopForwarder drops links.
type nopForwarder struct{}

func (nopForwarder) Forward(context.Context, []string) error { return nil }

// A page deleted at its site — a 404 from the second crawl day on — replays
// its first day's version for a first-day date and the 404 for later
// dates, and the list of dates shows both: crawled by the real crawler into
// the real archive.
func TestDeletedPageReplay(t *testing.T) {
	ctx := context.Background()
	var gone atomic.Bool
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/page" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if gone.Load() {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<p>No such page.</p>")
			return
		}
		fmt.Fprint(w, "<p>The page as it was.</p>")
	}))
	defer site.Close()
	url := site.URL + "/page"

	store, err := archive.Open(t.TempDir(), archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := crawl.New(t.TempDir(), crawl.Config{HostRate: 1000, Clock: clock, Timeout: 5 * time.Second, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, crawl.Deps{Forwarder: nopForwarder{}}.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitIdle := func() {
		t.Helper()
		testwait.For(t, "the crawl to be idle", 10*time.Second, c.Idle)
	}
	if err := c.Add(ctx, []string{url}); err != nil {
		t.Fatal(err)
	}
	waitIdle()
	gone.Store(true)
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle()

	s := newServer(t, store)
	for _, tc := range []struct {
		ts   string
		code int
		want string
	}{
		{"20260301", 200, "The page as it was."},
		{"20260302", 404, "No such page."},
		{"2027", 404, "No such page."},
	} {
		w := get(t, s, "/web/"+tc.ts+"id_/"+url)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %q, want %d with %q", tc.ts, w.Code, w.Body, tc.code, tc.want)
		}
	}
	w := get(t, s, "/web/*/"+url)
	if body := w.Body.String(); !strings.Contains(body, "2 captures") ||
		!strings.Contains(body, "/web/20260301120000/"+url) || !strings.Contains(body, "/web/20260302120000/"+url) {
		t.Errorf("dates page lacks the two captures:\n%s", body)
	}
}
