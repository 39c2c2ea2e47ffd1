package node

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
)

// TestPoliteOwnerDown: when the owner of a robots.txt or of a host's
// schedule does not answer, a node fetches robots.txt itself, through its
// crawler's cache, so that repeated failures still cost the site one
// fetch per node per RobotsTTL; and it paces the host with the
// equal-share fallback.
func TestPoliteOwnerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := Config{
		VirtualServers:    2,
		StabilizeInterval: 100 * time.Millisecond,
		Crawl:             crawl.Config{HostRate: 50, AllowPrivate: loopback},
	}
	lr, err := StartLocalRing(ctx, t.TempDir(), 2, base)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	// A node that has gone away: its contact refuses connections.
	dcfg := base
	dcfg.DataDir = filepath.Join(t.TempDir(), "dead")
	dcfg.Listen, dcfg.Gateway = "127.0.0.1:0", "127.0.0.1:0"
	dead, err := New(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	deadContact := dead.Contact()
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}

	a := lr.Nodes[0]
	p, ok := a.cfg.Crawl.Robots.(*politeness)
	if !ok {
		t.Fatal("node does not use the ring's robots source")
	}

	// An origin whose robots.txt node A does not own, so that A must ask.
	var fetches atomic.Int64
	var origin string
	var key id.ID
	for i := 0; origin == "" && i < 32; i++ {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				fetches.Add(1)
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		}))
		defer srv.Close()
		k, err := robotsKey(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if !a.ring.Owns(k) {
			origin, key = srv.URL, k
		}
	}
	if origin == "" {
		t.Fatal("no origin owned by the other node")
	}

	for round := range 3 {
		p.mu.Lock()
		p.owners[key] = ownerEntry{c: deadContact, expires: time.Now().Add(time.Minute)}
		p.mu.Unlock()
		rec, err := p.Robots(ctx, origin)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if rec.Status != http.StatusOK {
			t.Fatalf("round %d: status %d, want 200", round, rec.Status)
		}
	}
	if got := fetches.Load(); got != 1 {
		t.Errorf("robots.txt fetched %d times by one node whose owner is down, want 1", got)
	}
	if st := a.PolitenessStats(); st.RobotsFallback != 3 {
		t.Errorf("robots fallbacks %d, want 3", st.RobotsFallback)
	}
	// With the owner reachable again, the record comes from it.
	if _, err := p.Robots(ctx, origin); err != nil {
		t.Fatal(err)
	}
	if st := a.PolitenessStats(); st.RobotsAsked != 4 || st.RobotsFallback != 3 {
		t.Errorf("asked %d, fallbacks %d: want the live owner asked", st.RobotsAsked, st.RobotsFallback)
	}
	if got := fetches.Load(); got != 2 {
		t.Errorf("robots.txt fetched %d times in all, want 2 (once by A, once by the owner)", got)
	}

	// The budget: a host scheduled by the dead node.
	var host string
	for i := 0; host == "" && i < 64; i++ {
		if h := fmt.Sprintf("host%d.example", i); !a.ring.Owns(hostKey(h)) {
			host = h
		}
	}
	p.mu.Lock()
	p.owners[hostKey(host)] = ownerEntry{c: deadContact, expires: time.Now().Add(time.Minute)}
	p.mu.Unlock()
	if err := p.Wait(ctx, host, 0); err != nil {
		t.Fatal(err)
	}
	st := a.PolitenessStats()
	if st.Failures != 1 || st.FallbackWaits != 1 {
		t.Errorf("budget with a dead owner: %d failures, %d fallback waits; want 1 and 1", st.Failures, st.FallbackWaits)
	}
	if est := p.nodeEstimate(); est < 4 {
		t.Errorf("fallback node estimate %d in a 2-node ring, want at least twice the ring", est)
	}
}
