package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/node"
)

// TestSeedSendsToken runs herod seed against a gateway with an admin
// token: without the data directory's token it does not even ask; with it
// the gateway accepts the URLs.
func TestSeedSendsToken(t *testing.T) {
	dir := t.TempDir()
	token, err := gateway.LoadAdminToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seeded []string
	gw, err := gateway.New(gateway.Config{
		Archive: emptyArchive{}, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test",
		AdminToken: token,
		Seed: func(_ context.Context, urls []string) ([]gateway.SeedResult, error) {
			seeded = append(seeded, urls...)
			res := make([]gateway.SeedResult, len(urls))
			for i, u := range urls {
				res[i] = gateway.SeedResult{URL: u, Canonical: u, Outcome: gateway.SeedQueued}
			}
			return res, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	if _, err := run(t, seedCmd, "--node", srv.URL, "--data", t.TempDir(), "http://a.example/"); err == nil ||
		!strings.Contains(err.Error(), "no admin token") {
		t.Errorf("seed without a token: %v", err)
	}
	out, err := run(t, seedCmd, "--node", srv.URL, "--data", dir, "http://a.example/", "http://b.example/")
	if err != nil || !strings.Contains(out, "queued          http://a.example/\nqueued          http://b.example/\n") || strings.Join(seeded, " ") != "http://a.example/ http://b.example/" {
		t.Errorf("seed: %q, %v; seeded %q", out, err, seeded)
	}
	// The gateway refuses the same request without the token.
	resp, err := http.Post(srv.URL+"/api/seed", "text/plain", strings.NewReader("http://c.example/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(seeded) != 2 {
		t.Errorf("seed without the token: %s", resp.Status)
	}
}

// emptyArchive is a gateway.Archive with nothing in it.
type emptyArchive struct{}

func (emptyArchive) Versions(context.Context, string) ([]archive.Version, error) { return nil, nil }

func (emptyArchive) Get(context.Context, string, time.Time) (archive.Version, *archive.Capture, error) {
	return archive.Version{}, nil, archive.ErrNotFound
}

// TestStatusWatch runs herod status --watch against a gateway and checks
// that it shows the status and the ring's nodes (their state, NAT and
// relay, replication) again every interval until interrupted, and that a
// failing node does not end the watch.
func TestStatusWatch(t *testing.T) {
	var calls atomic.Int64
	gw, err := gateway.New(gateway.Config{
		Archive: emptyArchive{}, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test",
		PublicStatus: true,
		Status: func(context.Context) any {
			st := node.Status{Peer: "peerA", Addr: "127.0.0.1:4001", Reach: node.ReachListen}
			st.Crawl.Day = calls.Add(1)
			st.Replication.Health = node.ReplicationHealth{Ranges: 4, Behind: 1, BelowK: 12, LagSec: 31}
			return st
		},
		Ring: func(context.Context) ringview.View {
			return ringview.View{Self: "peerA", Peers: []ringview.PeerSummary{
				{Peer: "peerA", Addr: "127.0.0.1:4001", State: "up", Reach: "listen", Versions: 10, BelowK: 12, LagSec: 31},
				{Peer: "peerB", Addr: "198.51.100.7:4001", State: "up", Reach: "mapped", Relayed: true, Versions: 9},
				{Peer: "peerC", Addr: "203.0.113.9:4001", State: "unreachable"},
			}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
	defer cancel()
	var out, errb strings.Builder
	if err := statusCmd(ctx, []string{"--node", srv.URL, "--data", t.TempDir(), "--watch", "100ms"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	s := strings.Join(strings.Fields(out.String()), " ") // tabwriter's alignment aside
	if n := strings.Count(s, "every 100ms"); n < 3 {
		t.Errorf("%d refreshes in 450ms, want 3 or more:\n%s", n, s)
	}
	for _, want := range []string{"versions below k copies 12", "replication lag 31 s", "relayed NAT (mapped)", "unreachable", "peerA (this node)", "crawl day 3"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if _, err := run(t, statusCmd, "--node", srv.URL, "--watch", "1ms"); err == nil {
		t.Error("--watch 1ms accepted")
	}
}
