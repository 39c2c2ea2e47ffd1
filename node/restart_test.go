package node

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// freeAddr returns a loopback address with a port free right now. A node's
// virtual-server ids derive from its address, so a restarted node must come
// back on the same one.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRestartMidCrawl stops a node in the middle of a crawl and starts it
// again on the same data directory: the queue, the forwarder's outbox and
// the archive carry over, and the crawl finishes with every page stored
// exactly once.
func TestRestartMidCrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a sample web twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Hosts: 2, Pages: 150})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()

	cfg := Config{
		DataDir:       filepath.Join(t.TempDir(), "node"),
		Listen:        freeAddr(t),
		Gateway:       "127.0.0.1:0",
		FlushInterval: 20 * time.Millisecond,
		Crawl:         crawl.Config{HostRate: 200, Concurrency: 4, AllowPrivate: loopback},
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	for n.crawler.Stats().FetchedToday < 40 {
		if ctx.Err() != nil {
			t.Fatal("crawl never got going")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("close mid-crawl: %v", err)
	}
	stored := n.store.Stats().Versions // read after Close: counters stay readable
	t.Logf("stopped after %d versions", stored)

	n, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lr := &LocalRing{Nodes: []*Node{n}}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	want := web.Reachable(0) // every answer is archived, 404s too
	for _, u := range want {
		vs, err := n.store.Versions(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 1 {
			t.Errorf("%s: %d versions after the restart, want 1", u, len(vs))
		}
	}
	if got := n.store.Stats().Versions; got != int64(len(want)) {
		t.Errorf("%d versions stored, want %d", got, len(want))
	}
}

// TestRestartKeepsChosenIndexes: a node that chose its virtual-server
// indexes when it joined comes back at the same ring positions.
func TestRestartKeepsChosenIndexes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	a, err := New(Config{DataDir: filepath.Join(dir, "a"), Listen: freeAddr(t), Gateway: "127.0.0.1:0", VirtualServers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := Config{DataDir: filepath.Join(dir, "b"), Listen: freeAddr(t), Gateway: "127.0.0.1:0",
		VirtualServers: 4, Join: []string{a.Multiaddr()}}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	before := b.ring.Indexes()
	b.Close()

	b, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if after := b.ring.Indexes(); !slices.Equal(after, before) {
		t.Fatalf("indexes after restart %v, before %v", after, before)
	}
	t.Logf("chosen indexes %v", before)
}
