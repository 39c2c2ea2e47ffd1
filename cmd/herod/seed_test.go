package main

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/gateway"
)

// TestSeedReportsEachURL runs herod seed with --data alone against a
// gateway whose node recorded its URL there, and checks the line printed
// for each URL (queued, refused naming the flag, fetched today and when
// next), the exit error when one is refused, and the one-line error when
// no node answers (herod status too).
func TestSeedReportsEachURL(t *testing.T) {
	dir := t.TempDir()
	token, err := gateway.LoadAdminToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	fetched := time.Date(2026, 11, 28, 9, 30, 5, 0, time.UTC)
	gw, err := gateway.New(gateway.Config{
		Archive: emptyArchive{}, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test",
		AdminToken: token,
		Seed: func(_ context.Context, urls []string) ([]gateway.SeedResult, error) {
			res := make([]gateway.SeedResult, len(urls))
			for i, u := range urls {
				res[i] = gateway.SeedResult{URL: u, Canonical: u, Outcome: gateway.SeedQueued}
				switch {
				case strings.Contains(u, "10.0.0.7"):
					res[i].Outcome, res[i].Reason = gateway.SeedRefused, "its host is at 10.0.0.7, an internal address the crawler refuses; to archive it, restart the node with --allow-private 10.0.0.7"
				case strings.Contains(u, "daily"):
					res[i].Outcome, res[i].Fetched, res[i].Next = gateway.SeedFetchedToday, fetched, fetched.Truncate(24*time.Hour).Add(24*time.Hour)
				}
			}
			return res, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	if err := gateway.WriteGatewayURL(dir, srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, seedCmd, "--data", dir, "http://good.example/", "http://10.0.0.7/", "http://daily.example/")
	for _, want := range []string{
		"queued          http://good.example/\n",
		"refused         http://10.0.0.7/: its host is at 10.0.0.7, an internal address the crawler refuses; to archive it, restart the node with --allow-private 10.0.0.7\n",
		"fetched today   http://daily.example/ at 09:30:05 UTC; it is crawled once a day, next from 2026-11-29 00:00 UTC\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("seed printed\n%s\nwithout %q", out, want)
		}
	}
	if err == nil || err.Error() != "refused: 1 of 3 URL(s), see above" {
		t.Errorf("seed with a refused URL: err %v", err)
	}
	// The node recorded in --data is not running: one line saying so.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String() + "/"
	ln.Close()
	if err := gateway.WriteGatewayURL(dir, gone); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, seedCmd, "--data", dir, "http://good.example/")
	want := "cannot reach the node at " + gone + " (connection refused): is `herod run --data " + dir + "` running? Else pass its gateway URL with --node"
	if err == nil || err.Error() != want {
		t.Errorf("seed of a stopped node: %v\nwant %s", err, want)
	}
	// herod status says the same.
	_, err = run(t, statusCmd, "--data", dir)
	if err == nil || err.Error() != want {
		t.Errorf("status of a stopped node: %v\nwant %s", err, want)
	}
	// --node wins over the recorded URL.
	if out, err := run(t, seedCmd, "--data", dir, "--node", srv.URL, "http://good.example/"); err != nil || !strings.Contains(out, "queued") {
		t.Errorf("seed --node: %q %v", out, err)
	}
}
