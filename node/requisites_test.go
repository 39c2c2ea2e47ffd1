package node

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
)

// TestRequisitesReachOwners crawls a page on a three-node ring with
// AllowDynamic off: its stylesheet with a cache-busting query, the sheet
// that one imports with a query, and its image with a query travel to
// their owners as requisites and are archived there; the page's search
// link with a query is not fetched.
func TestRequisitesReachOwners(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var searched atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><head><link rel="stylesheet" href="/_static/pydoctheme.css?2022.1"></head>
<body><a href="/search?q=x">search</a><img src="/logo.png?v=2"></body></html>`)
		case "/_static/pydoctheme.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, `@import url("basic.css?v=3");`)
		case "/_static/basic.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, `body { color: black }`)
		case "/logo.png":
			w.Header().Set("Content-Type", "image/png")
			fmt.Fprint(w, "png")
		case "/search":
			searched.Store(true)
			fmt.Fprint(w, "results")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{
		VirtualServers:    4,
		StabilizeInterval: 100 * time.Millisecond,
		FlushInterval:     20 * time.Millisecond,
		Crawl:             crawl.Config{HostRate: 2000, AllowPrivate: loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lr.Nodes[0].Seed(ctx, []string{srv.URL + "/index.html"}); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, p := range []string{"/_static/pydoctheme.css?2022.1", "/_static/basic.css?v=3", "/logo.png?v=2"} {
		reqs = append(reqs, srv.URL+p)
	}
	counts := lr.versionCounts(ctx, t, reqs)
	for _, u := range reqs {
		if counts[u] != 1 {
			t.Errorf("%s: %d versions on its owner, want 1", u, counts[u])
		}
	}
	if searched.Load() {
		t.Error("the navigational link /search?q=x was fetched")
	}
	lr.checkNoStrays(ctx, t)

	// The gateway finds the stylesheet under another cache-buster
	// (fuzzy matching over the ring's prefix listing), and says so; it
	// prints the latency of an exact replay, of a fuzzy one, and of a
	// miss with no capture at the path (go test ./node -run
	// TestRequisitesReachOwners -v).
	ts := time.Now().UTC().Format("20060102150405")
	replay := lr.Nodes[0].ReplayURL() + "web/" + ts + "id_/"
	timed := func(u string, code int, fuzzy string) time.Duration {
		t.Helper()
		var took []time.Duration
		for range 21 {
			start := time.Now()
			resp, err := http.Get(replay + u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			took = append(took, time.Since(start))
			if resp.StatusCode != code || resp.Header.Get("X-Archive-Fuzzy") != fuzzy {
				t.Fatalf("%s: %d X-Archive-Fuzzy %q, want %d %q", u, resp.StatusCode, resp.Header.Get("X-Archive-Fuzzy"), code, fuzzy)
			}
		}
		slices.Sort(took)
		return took[len(took)/2]
	}
	exact := timed(srv.URL+"/_static/pydoctheme.css?2022.1", 200, "")
	fuzzy := timed(srv.URL+"/_static/pydoctheme.css?2023.1", 200, srv.URL+"/_static/pydoctheme.css?2022.1")
	miss := timed(srv.URL+"/_static/nothing.css?v=1", 404, "")
	t.Logf("3-node ring, median of 21 replays: exact %v, fuzzy match %v, no capture at the path %v", exact, fuzzy, miss)
}
