package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/herod-archive/herod/node"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/ringtest"
)

// localRing is several nodes on this machine's loopback interface, joined
// into one ring: what `herod demo` runs. It uses only the nodes' exported
// API (node's own tests have their own, in package node).
type localRing struct {
	nodes []*node.Node
}

// startLocalRing starts count nodes with data directories under dir. Each
// node gets a copy of base with its own DataDir and free loopback ports
// for the ring and the gateway; every node after the first joins through
// the first. base.Seeds is ignored: seed once waitStable returns, so that
// links reach their true owners.
func startLocalRing(ctx context.Context, dir string, count int, base node.Config) (*localRing, error) {
	if count < 1 {
		return nil, errors.New("local ring: need at least one node")
	}
	lr := &localRing{}
	for i := range count {
		cfg := base
		cfg.DataDir = filepath.Join(dir, fmt.Sprintf("node%d", i))
		if cfg.Listen == "" {
			cfg.Listen = "127.0.0.1:0"
		}
		if cfg.Gateway == "" {
			cfg.Gateway = "127.0.0.1:0"
		}
		if i > 0 {
			cfg.Join = []string{lr.nodes[0].Multiaddr()}
		}
		cfg.Seeds = nil
		n, err := node.New(cfg)
		if err != nil {
			lr.Close()
			return nil, fmt.Errorf("local ring: node %d: %w", i, err)
		}
		lr.nodes = append(lr.nodes, n)
		if err := n.Start(ctx); err != nil {
			lr.Close()
			return nil, fmt.Errorf("local ring: node %d: %w", i, err)
		}
	}
	return lr, nil
}

// Close stops every node.
func (lr *localRing) Close() error {
	var errs []error
	for _, n := range lr.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

func (lr *localRing) rings() []*ring.Ring {
	rs := make([]*ring.Ring, len(lr.nodes))
	for i, n := range lr.nodes {
		rs[i] = n.Ring()
	}
	return rs
}

// waitStable waits until the ring has converged (ringtest.WaitStable).
func (lr *localRing) waitStable(ctx context.Context) error {
	return ringtest.WaitStable(ctx, lr.rings())
}

// waitIdle waits until the whole ring has nothing to crawl or forward
// (ringtest.WaitSettled).
func (lr *localRing) waitIdle(ctx context.Context) error {
	sweep := func() (bool, int64) {
		idle, progress := true, int64(0)
		for _, n := range lr.nodes {
			idle = n.Idle() && idle
			st := n.Status()
			progress += st.Forward.Sent + st.Forward.Local + st.Links.Received + st.Crawl.FetchedToday
		}
		return idle, progress
	}
	return ringtest.WaitSettled(ctx, sweep, func() string {
		var b strings.Builder
		for _, n := range lr.nodes {
			st := n.Status()
			fmt.Fprintf(&b, "\n  %s: queued %d, in flight %d, fetched %d; forward pending %d",
				n.Contact().Addr, st.Crawl.Queued, st.Crawl.InFlight, st.Crawl.FetchedToday, st.Forward.Pending)
		}
		return b.String()
	})
}
