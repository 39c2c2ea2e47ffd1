package node

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/node/identity"
)

// diskHolds reports whether a segment under dir holds marker in its
// decompressed records (gzip segments; a store of fewer records than
// its dictionary samples has no other kind).
func diskHolds(t *testing.T, dir, marker string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".warc.zst"):
			t.Fatalf("%s: a zstd segment in a store this small", p)
		case !strings.HasSuffix(p, ".warc.gz"):
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		found = found || bytes.Contains(raw, []byte(marker))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestAccessPurgeRingWide: on real libp2p nodes, an authority's ring-wide
// purge rule removes the captures of its prefix from every holder —
// index and bytes — and no other; replication does not bring them back;
// a node that was down when it was given, and one that joins later,
// remove or refuse them; revoking the rule lifts the refusal and brings
// nothing back.
func TestAccessPurgeRingWide(t *testing.T) {
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
	lr := startStableRing(ctx, t, dir, 4, base)
	defer func() { lr.Close() }()
	var private, public []string
	for i := range 12 {
		for _, kind := range []string{"private", "public"} {
			u := fmt.Sprintf("http://takedown.invalid/%s/%d", kind, i)
			c := archive.Capture{URL: u, Time: time.Now().Add(-time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>" + kind + " page " + u + "</p>")}
			if _, _, err := lr.Nodes[i%4].store.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
			if kind == "private" {
				private = append(private, u)
			} else {
				public = append(public, u)
			}
		}
	}
	replicateAll := func(nodes []*Node) {
		t.Helper()
		for _, n := range nodes {
			if err := n.Replicate(ctx); err != nil {
				t.Logf("round of %s: %v", n.self.Addr, err)
			}
		}
		for _, n := range nodes {
			for !n.ReplicationIdle() {
				if ctx.Err() != nil {
					t.Fatal("pull jobs did not end")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	replicateAll(lr.Nodes)
	holders := 0
	for _, n := range lr.Nodes {
		if versionsOf(t, ctx, n.store, private) > 0 {
			holders++
		}
	}
	if holders < 2 || !diskHolds(t, lr.Nodes[1].cfg.DataDir, "private page") {
		t.Fatalf("before the purge %d nodes hold the private pages", holders)
	}
	purged := func(n *Node) bool {
		return versionsOf(t, ctx, n.store, private) == 0 && !diskHolds(t, n.cfg.DataDir, "private page")
	}
	waitPurged := func(n *Node) time.Duration {
		t.Helper()
		start := time.Now()
		for !purged(n) {
			if ctx.Err() != nil {
				t.Fatalf("%s still holds the purged pages: %d versions", n.self.Addr, versionsOf(t, ctx, n.store, private))
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}

	// Node 3 is down when the authority gives the takedown.
	down := lr.Nodes[3]
	downCfg := down.cfg
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	up := lr.Nodes[:3]
	rule := access.Rule{URL: "http://takedown.invalid/private/", Action: access.Purge, Reason: "court order"}
	start := time.Now()
	if err := lr.Nodes[0].access.Add(ctx, rule, true); err != nil {
		t.Fatal(err)
	}
	for _, n := range up {
		waitPurged(n)
	}
	t.Logf("purged from the disks of 3 running nodes %s after the order", time.Since(start))
	for _, n := range up {
		if got := versionsOf(t, ctx, n.store, public); got == 0 {
			t.Fatalf("%s lost the pages outside the prefix", n.self.Addr)
		}
		if !diskHolds(t, n.cfg.DataDir, "public page") {
			t.Fatalf("%s lost the bytes of the pages outside the prefix", n.self.Addr)
		}
	}

	// Node 3 returns with the pages on its disk: its first exchange
	// brings the order, and it removes them; no one pulls them back.
	downCfg.Join = []string{lr.Nodes[0].Multiaddr()}
	downCfg.Listen, downCfg.Gateway = "127.0.0.1:0", "127.0.0.1:0"
	back, err := New(downCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Start(ctx); err != nil {
		back.Close()
		t.Fatal(err)
	}
	lr.Nodes[3] = back
	// Not WaitStable: the ring's successor lists settle slowly after a
	// restart on new ports, and the exchange needs only the replicas.
	for !purged(back) {
		replicateAll(lr.Nodes)
		if ctx.Err() != nil {
			t.Fatal("the node that was down kept the purged pages")
		}
		time.Sleep(50 * time.Millisecond)
	}
	replicateAll(lr.Nodes)
	for _, n := range lr.Nodes {
		if !purged(n) {
			t.Fatalf("%s: replication brought purged pages back", n.self.Addr)
		}
	}

	// A node that joins afterwards refuses them too.
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
	for len(late.store.URLPurges()) != 1 {
		replicateAll([]*Node{late})
		if ctx.Err() != nil {
			t.Fatal("the late node did not take the purge rule")
		}
		time.Sleep(50 * time.Millisecond)
	}
	replicateAll(lr.Nodes)
	waitPurged(late)
	if got := versionsOf(t, ctx, late.store, public); got == 0 {
		t.Log("the late node holds none of the public pages (no range of theirs)")
	}

	// Revoked: the refusal is lifted on every node, nothing returns.
	if _, err := lr.Nodes[0].access.Remove(ctx, rule.URL, true); err != nil {
		t.Fatal(err)
	}
	for _, n := range lr.Nodes {
		for len(n.store.URLPurges()) != 0 {
			if ctx.Err() != nil {
				t.Fatalf("%s kept the purge after its revocation", n.self.Addr)
			}
			replicateAll([]*Node{n})
			time.Sleep(50 * time.Millisecond)
		}
		if !purged(n) {
			t.Fatalf("%s: a revocation brought purged pages back", n.self.Addr)
		}
	}
}

// TestAccessPurgeLocal: a purge rule in a node's own rules file removes
// its captures from that node's disk; removing the rule lifts the
// refusal and brings nothing back.
func TestAccessPurgeLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lr, err := StartLocalRing(ctx, t.TempDir(), 1, Config{VirtualServers: 1, ReplicationInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	n := lr.Nodes[0]
	var private []string
	for i := range 5 {
		for _, kind := range []string{"private", "public"} {
			u := fmt.Sprintf("http://local.invalid/%s/%d", kind, i)
			c := archive.Capture{URL: u, Time: time.Now().Add(-time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>" + kind + " page " + u + "</p>")}
			if _, _, err := n.store.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
			if kind == "private" {
				private = append(private, u)
			}
		}
	}
	rule := access.Rule{URL: "http://local.invalid/private/", Action: access.Purge}
	if err := n.access.Add(ctx, rule, false); err != nil {
		t.Fatal(err)
	}
	// Counted once the purge returns: after its captures are gone.
	for n.PurgedByRules() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the local purge rule did not remove the captures")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if versionsOf(t, ctx, n.store, private) != 0 || diskHolds(t, n.cfg.DataDir, "private page") {
		t.Fatal("the local purge rule left captures")
	}
	if !diskHolds(t, n.cfg.DataDir, "public page") || n.PurgedByRules() != 5 {
		t.Fatalf("the purge reached beyond its prefix, or miscounted: %d removed", n.PurgedByRules())
	}
	if _, err := n.access.Remove(ctx, rule.URL, false); err != nil {
		t.Fatal(err)
	}
	for len(n.store.URLPurges()) != 0 {
		if ctx.Err() != nil {
			t.Fatal("the purge outlived its rule")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if versionsOf(t, ctx, n.store, private) != 0 {
		t.Fatal("removing the rule brought captures back")
	}
}
