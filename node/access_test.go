package node

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/node/identity"
)

// TestAccessRingWide: on real libp2p nodes, an authority's takedown
// (an access order) reaches every member of 5 and is enforced by each one's
// gateway rules; a member's own ring-wide rule is refused and counted by
// the others; a node that joins later takes the takedown in its first
// replication round; a restarted node has it before it starts.
func TestAccessRingWide(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "node0"), 0o755); err != nil {
		t.Fatal(err)
	}
	authKey, err := identity.LoadKey(filepath.Join(dir, "node0"))
	if err != nil {
		t.Fatal(err)
	}
	authID, err := peer.IDFromPrivateKey(authKey)
	if err != nil {
		t.Fatal(err)
	}
	base := Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond, ReplicationInterval: -1,
		PurgeAuthorities: []string{authID.String()}}
	lr := startStableRing(ctx, t, dir, 5, base)
	defer func() { lr.Close() }()
	const private, public = "http://takedown.invalid/private/a", "http://takedown.invalid/public"
	captured := time.Now().Add(-time.Hour)
	blocked := func(n *Node) bool { return n.access.Decide(private, captured).Action == access.Block }
	waitFor := func(what string, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not after %s", what, time.Since(start))
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}

	rule := access.Rule{URL: "http://takedown.invalid/private/", Action: access.Block, Reason: "legal notice"}
	start := time.Now()
	added := make(chan error, 1)
	go func() { added <- lr.Nodes[0].access.Add(ctx, rule, true) }()
	seen := map[*Node]time.Duration{} // when each node was first seen enforcing it
	for len(seen) < len(lr.Nodes) {
		for _, n := range lr.Nodes {
			if _, ok := seen[n]; !ok && blocked(n) {
				seen[n] = time.Since(start)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the takedown held on %d of %d nodes", len(seen), len(lr.Nodes))
		}
		time.Sleep(100 * time.Microsecond)
	}
	var held []time.Duration
	for _, d := range seen {
		held = append(held, d)
	}
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	slices.Sort(held)
	t.Logf("takedown held on %d nodes: median %s, max %s after it was given", len(held), held[len(held)/2], held[len(held)-1])
	for _, n := range lr.Nodes {
		if d := n.access.Decide(public, captured); d.Action != access.Allow {
			t.Errorf("%s: the takedown reaches beyond its prefix: %s", n.self.Addr, d.Action)
		}
		if l := n.access.List(); len(l) != 1 || l[0].Source != access.Ring {
			t.Errorf("%s lists %+v", n.self.Addr, l)
		}
		if st := n.Status().Access; st.Ring != 1 || st.Local != 0 {
			t.Errorf("%s status: %+v", n.self.Addr, st)
		}
	}

	// A member's own ring-wide rule: in force on it, refused by the others.
	own := access.Rule{SURT: "invalid,takedown)/", Action: access.Exclude}
	if err := lr.Nodes[1].access.Add(ctx, own, true); err != nil {
		t.Fatal(err)
	}
	if lr.Nodes[1].access.Decide(public, captured).Action != access.Exclude {
		t.Fatal("a node's own ring-wide rule is not in force on it")
	}
	waitFor("the member's rule refused", func() bool {
		for i, n := range lr.Nodes {
			if i != 1 && n.PurgeStats().Refused == 0 {
				return false
			}
		}
		return true
	})
	for _, n := range []*Node{lr.Nodes[0], lr.Nodes[2], lr.Nodes[3], lr.Nodes[4]} {
		if d := n.access.Decide(public, captured); d.Action != access.Allow {
			t.Errorf("%s took a member's rule: %s", n.self.Addr, d.Action)
		}
	}

	// A node that joins afterwards.
	cfg := base
	cfg.DataDir, cfg.Listen, cfg.Gateway = filepath.Join(dir, "late"), "127.0.0.1:0", "127.0.0.1:0"
	cfg.Join = []string{lr.Nodes[0].Multiaddr()}
	late, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lr.Nodes = append(lr.Nodes, late)
	if err := late.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("the takedown on the late node", func() bool {
		if !blocked(late) {
			_ = late.Replicate(ctx)
		}
		return blocked(late)
	})

	// Restarted: the rule holds from New, before the node starts.
	n2 := lr.Nodes[2]
	if err := n2.Close(); err != nil {
		t.Fatal(err)
	}
	cfg = n2.cfg
	cfg.Listen, cfg.Gateway = "127.0.0.1:0", "127.0.0.1:0"
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !blocked(again) {
		t.Fatal("a restarted node lost the takedown")
	}
}
