package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herod-archive/herod/node/forward"
)

// TestLinksOverHopLimit: a node passes on links it does not own, unless
// they have been passed on forward.MaxHops times already; then it queues them
// itself, so that they are not lost while views of the ring disagree, and
// counts them (Status.Links.OverHops), since the owner may queue them too.
func TestLinksOverHopLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lr := startStableRing(ctx, t, t.TempDir(), 2, Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond})
	defer lr.Close()
	a := lr.Nodes[0]
	var notMine []string // URLs the other node owns
	for i := 0; len(notMine) < 2; i++ {
		// Port 9 (discard) on a loopback address: never fetched in time.
		if u := fmt.Sprintf("http://127.0.0.9:9/%d", i); !a.ownsURL(u) {
			notMine = append(notMine, u)
		}
	}
	known := a.crawler.Stats().KnownURLs

	if err := a.links.Receive(ctx, notMine[:1], forward.MaxHops-1, false); err != nil {
		t.Fatal(err)
	}
	if got := a.crawler.Stats().KnownURLs; got != known {
		t.Fatalf("a link below the hop limit was queued by a non-owner (known %d -> %d)", known, got)
	}
	if n := a.Status().Links.OverHops; n != 0 {
		t.Fatalf("OverHops %d after a link below the limit", n)
	}

	if err := a.links.Receive(ctx, notMine[1:], forward.MaxHops, false); err != nil {
		t.Fatal(err)
	}
	if got := a.crawler.Stats().KnownURLs; got != known+1 {
		t.Fatalf("a link at the hop limit was not queued here (known %d -> %d)", known, got)
	}
	if n := a.Status().Links.OverHops; n != 1 {
		t.Fatalf("OverHops %d, want 1", n)
	}
}
