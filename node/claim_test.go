package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// TestJoinerDoesNotRefetch: a node crawls a site alone; a second node
// joins the same day and takes part of the range; every URL is seeded
// again. The joiner claims each URL of its new range from the former
// owner, finds it fetched today, and fetches nothing: the site sees
// every URL once.
func TestJoinerDoesNotRefetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Hosts: 2, Pages: 40, Seed: 5})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	start := func(name, ip, join string) *Node {
		cfg := Config{
			DataDir: filepath.Join(dir, name), Listen: ip + ":0", Gateway: "127.0.0.1:0",
			VirtualServers: 4, StabilizeInterval: 100 * time.Millisecond, FlushInterval: 20 * time.Millisecond,
			RebalanceInterval: -1,
			Crawl:             crawl.Config{HostRate: 200, Concurrency: 16, AllowPrivate: loopback},
		}
		if join != "" {
			cfg.Join = []string{join}
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			n.Close()
			t.Fatal(err)
		}
		return n
	}
	a := start("a", "127.0.0.61", "")
	lr := &LocalRing{Nodes: []*Node{a}}
	defer func() { lr.Close() }()
	if err := a.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	known := sortedKeys(requestsPerURL(web))

	b := start("b", "127.0.0.62", a.Multiaddr())
	lr.Nodes = append(lr.Nodes, b)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Seed(ctx, known); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st := b.Status().Claims
	t.Logf("joiner: %d claims, %d found fetched today; former owner: %d claimed away", st.Sent, st.Taken, a.Status().Claims.Away)
	if st.Sent == 0 || st.Taken == 0 {
		t.Errorf("the joiner claimed %d URLs, %d taken: it should have claimed its range's URLs", st.Sent, st.Taken)
	}
	checkOncePerURL(t, "after the join", known, requestsPerURL(web))

	// The joiner receives its range's versions from the former owner by
	// replication, not by fetching them: it ends with every version (two
	// nodes: each holds the other's range as a replica), and the bytes
	// moved are about the data they carry.
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(200 * time.Millisecond)
	}
	waitReplicated(ctx, t, lr)
	as, bs := a.Status(), b.Status()
	if bs.Archive.Versions != as.Archive.Versions {
		t.Errorf("the joiner holds %d versions, the former owner %d", bs.Archive.Versions, as.Archive.Versions)
	}
	var moved int64
	for _, w := range bs.Wire {
		if w.Protocol == string(replicateProtocol) {
			moved += w.In + w.Out
		}
	}
	t.Logf("join: %d versions, %d bytes on disk, %d bytes of replication traffic (%.2f× the data)",
		bs.Archive.Versions, bs.Archive.Bytes, moved, float64(moved)/float64(max(bs.Archive.Bytes, 1)))
}
