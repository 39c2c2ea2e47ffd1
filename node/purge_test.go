package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/identity"
)

// versionsOf returns how many versions of urls s holds.
func versionsOf(t *testing.T, ctx context.Context, s *archive.Store, urls []string) int {
	t.Helper()
	n := 0
	for _, u := range urls {
		vs, err := s.Versions(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		n += len(vs)
	}
	return n
}

// replayStatus fetches the raw replay of u at ts from n's gateway and
// returns the status and body.
func replayStatus(t *testing.T, n *Node, ts, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(n.ReplayURL() + "web/" + ts + "id_/" + u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPurgeAcrossReplicas: captures signed by a hostile peer X are held
// by several nodes of a 4-node ring, one of which is down when the ring's
// purge authority (node 0) orders X purged through its admin API. The
// running nodes carry the order out as it spreads; the node that was down
// catches up in its first replication round after it returns. After one
// round on every node no node holds a version of X's, no gateway serves
// one, another round brings none back, and X is refused from then on. A
// purge ordered by a node that is no authority is carried out by that
// node alone and refused by the others.
func TestPurgeAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "node0"), 0o755); err != nil {
		t.Fatal(err)
	}
	authKey, err := identity.LoadKey(filepath.Join(dir, "node0")) // node 0's identity, made before it starts
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
	auth, n1, n2 := lr.Nodes[0], lr.Nodes[1], lr.Nodes[2]

	// X's captures, valid and signed, planted on node 1 and node 3; and
	// captures node 2 signed, which nobody may purge but an authority.
	x := testKeySigner(t)
	src, err := archive.Open(filepath.Join(t.TempDir(), "x"), archive.Options{Signer: x})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var xURLs, honest []string
	var ownedBy1 string
	for i := 0; len(xURLs) < 30 || ownedBy1 == ""; i++ {
		u := fmt.Sprintf("http://example.invalid/x%d", i)
		if len(xURLs) == 30 && lr.Owner(id.OfString(u)) != n1 {
			continue
		}
		if ownedBy1 == "" && lr.Owner(id.OfString(u)) == n1 {
			ownedBy1 = u
		}
		xURLs = append(xURLs, u)
		c := archive.Capture{URL: u, Time: time.Now().Add(-time.Hour), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>planted by X</p>")}
		if _, _, err := src.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	copyAll(t, ctx, n1.store, src)
	copyAll(t, ctx, lr.Nodes[3].store, src)
	for i := range 10 {
		u := fmt.Sprintf("http://example.invalid/honest%d", i)
		honest = append(honest, u)
		c := archive.Capture{URL: u, Time: time.Now().Add(-time.Hour), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>true</p>")}
		if _, _, err := n2.store.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	replicateAll := func() {
		t.Helper()
		for _, n := range lr.Nodes {
			if err := n.Replicate(ctx); err != nil {
				t.Logf("round of %s: %v", n.self.Addr, err)
			}
		}
		for _, n := range lr.Nodes {
			for !n.ReplicationIdle() {
				if ctx.Err() != nil {
					t.Fatal("pull jobs did not end")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	replicateAll()
	ts := time.Now().UTC().Format("20060102150405")
	if code, body := replayStatus(t, auth, ts, ownedBy1); code != http.StatusOK || !strings.Contains(body, "planted by X") {
		t.Fatalf("before the purge the gateway does not serve X's capture: %d %q", code, body)
	}
	holders := 0
	for _, n := range lr.Nodes {
		if versionsOf(t, ctx, n.store, xURLs) > 0 {
			holders++
		}
	}
	t.Logf("before the purge: %d of 4 nodes hold versions X signed", holders)

	// Node 3 goes down; the authority orders the purge through its admin
	// API, as `herod purge --peer X` does.
	down := lr.Nodes[3]
	downCfg := down.cfg
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	token, err := gateway.ReadAdminToken(auth.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, auth.GatewayURL()+"api/purge", strings.NewReader(x.Peer()))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin purge: %s %s", resp.Status, b)
	}
	t.Logf("admin purge: %s", strings.TrimSpace(string(b)))
	for _, n := range lr.Nodes[:3] {
		for n.PurgeStats().Orders != 1 {
			if ctx.Err() != nil {
				t.Fatalf("the order did not reach %s: %+v", n.self.Addr, n.PurgeStats())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Node 3 returns with its archive as it was.
	downCfg.Join = []string{auth.Multiaddr()}
	back, err := New(downCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Start(ctx); err != nil {
		back.Close()
		t.Fatal(err)
	}
	lr.Nodes[3] = back
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(t, ctx, back.store, xURLs); got == 0 {
		t.Fatal("the node that was down lost X's versions before any round")
	}
	replicateAll()
	for i, n := range lr.Nodes {
		if got := versionsOf(t, ctx, n.store, xURLs); got != 0 {
			t.Errorf("node %d holds %d versions X signed after one round", i, got)
		}
		if !n.store.Refuses(x.Peer()) {
			t.Errorf("node %d does not refuse X", i)
		}
		if code, body := replayStatus(t, n, ts, ownedBy1); code == http.StatusOK || strings.Contains(body, "planted by X") {
			t.Errorf("node %d's gateway still serves X's capture: %d", i, code)
		}
	}
	replicateAll()
	for i, n := range lr.Nodes {
		if got := versionsOf(t, ctx, n.store, xURLs); got != 0 {
			t.Errorf("node %d: replication brought back %d versions X signed", i, got)
		}
	}

	// Node 1 is no authority: its operator's purge of node 2 is carried
	// out on node 1 only, and the others refuse the order.
	before := map[int]int{}
	for i, n := range lr.Nodes {
		before[i] = versionsOf(t, ctx, n.store, honest)
	}
	if _, err := n1.Purge(ctx, n2.self.Peer); err != nil {
		t.Fatal(err)
	}
	replicateAll()
	for i, n := range lr.Nodes {
		got := versionsOf(t, ctx, n.store, honest)
		switch {
		case n == n1:
			if got != 0 {
				t.Errorf("node 1 kept %d versions after its own purge", got)
			}
		case got < before[i] || n.store.Refuses(n2.self.Peer):
			t.Errorf("node %d carried out an unauthorized order: %d of %d versions left", i, got, before[i])
		}
	}
	refused := int64(0)
	for _, n := range lr.Nodes {
		refused += n.PurgeStats().Refused
	}
	if refused == 0 {
		t.Error("no node counted the unauthorized order as refused")
	}
	t.Logf("unauthorized order refused by the other nodes (%d refusals counted)", refused)
}
