package node

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestNewBuildsStartAttaches: New does no network I/O and builds no ring
// (the ring address is Start's to find, under Start's context); a node
// whose address is wrong fails at Start, and a node built but never
// started, or whose Start failed, closes cleanly.
func TestNewBuildsStartAttaches(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Gateway: "127.0.0.1:0", VirtualServers: 1,
		ReplicationInterval: -1, Announce: "not-an-address"}
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New with a wrong --announce: %v (the address is Start's to check)", err)
	}
	if n.Ring() != nil || n.crawler != nil {
		t.Fatal("New built the ring or the crawler before the address is known")
	}
	err = n.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ring address") {
		t.Fatalf("Start with a wrong --announce: %v, want a ring address error", err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close after a failed Start: %v", err)
	}

	cfg.Announce = ""
	n, err = New(cfg) // the same data directory: the first node let it go
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close without Start: %v", err)
	}
}

// TestStartUnderItsContext: Start waits under its context (the address,
// then the join); with one already ended it joins nobody and says why.
func TestStartUnderItsContext(t *testing.T) {
	n, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Gateway: "127.0.0.1:0", VirtualServers: 1,
		ReplicationInterval: -1, Join: []string{"/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGRUVh8rhsSBHFWjGPdTnyrNz4F7ebrmZYJvxjFw6EvMm"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with an ended context: %v, want context.Canceled", err)
	}
}
