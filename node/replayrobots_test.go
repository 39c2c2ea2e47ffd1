package node

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TestReplayRobotsNode: a node run with ReplayRobots hides, at its
// gateway, a capture its site's current robots.txt disallows for herod,
// as its crawler fetched that file (through the ring's robots service and
// the crawler's guarded client); the site's other captures replay.
func TestReplayRobotsNode(t *testing.T) {
	if testing.Short() {
		t.Skip("a real node in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var robotsFetches atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			robotsFetches.Add(1)
			io.WriteString(w, "User-agent: herod\nDisallow: /private\n")
			return
		}
		http.NotFound(w, r)
	}))
	defer site.Close()
	base := Config{VirtualServers: 1, ReplicationInterval: -1, ReplayRobots: true}
	base.Crawl.AllowPrivate = loopback
	lr, err := StartLocalRing(ctx, t.TempDir(), 1, base)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	n := lr.Nodes[0]
	when := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []string{"/private/a", "/public"} {
		if _, _, err := n.store.Put(ctx, archive.Capture{URL: site.URL + p, Time: when, Status: 200,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("body of " + p)}); err != nil {
			t.Fatal(err)
		}
	}
	replay := func(p string) (int, string) {
		resp, err := http.Get(n.ReplayURL() + "web/20240501000000id_/" + site.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := replay("/private/a"); code != http.StatusForbidden || !strings.Contains(body, "robots.txt") || strings.Contains(body, "body of") {
		t.Errorf("disallowed capture: %d %.300q", code, body)
	}
	if code, body := replay("/public"); code != 200 || body != "body of /public" {
		t.Errorf("allowed capture: %d %.300q", code, body)
	}
	if n := robotsFetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once", n)
	}
}
