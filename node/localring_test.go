package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/ringtest"
)

// LocalRing is several nodes on this machine's loopback interface, joined
// into one ring: what the end-to-end tests use (`herod demo` has its own,
// on the nodes' exported API: cmd/herod/localring.go).
type LocalRing struct {
	Nodes []*Node
}

// StartLocalRing starts count nodes with data directories under dir. Each
// node gets a copy of base with its own DataDir, a free loopback port for the
// ring and one for the gateway, then each function of each applied with
// its index; every node after the first joins through the
// first. base.Seeds is ignored: seed with Nodes[i].Seed once WaitStable
// returns, so that links reach their true owners.
func StartLocalRing(ctx context.Context, dir string, count int, base Config, each ...func(i int, c *Config)) (*LocalRing, error) {
	if count < 1 {
		return nil, errors.New("local ring: need at least one node")
	}
	lr := &LocalRing{}
	for i := 0; i < count; i++ {
		cfg := base
		cfg.DataDir = filepath.Join(dir, fmt.Sprintf("node%d", i))
		if cfg.Listen == "" {
			cfg.Listen = "127.0.0.1:0"
		}
		if cfg.Gateway == "" {
			cfg.Gateway = "127.0.0.1:0"
		}
		if i > 0 {
			cfg.Join = []string{lr.Nodes[0].Multiaddr()}
		}
		cfg.Seeds = nil
		for _, f := range each {
			f(i, &cfg)
		}
		n, err := New(cfg)
		if err != nil {
			lr.Close()
			return nil, fmt.Errorf("local ring: node %d: %w", i, err)
		}
		lr.Nodes = append(lr.Nodes, n)
		if err := n.Start(ctx); err != nil {
			lr.Close()
			return nil, fmt.Errorf("local ring: node %d: %w", i, err)
		}
	}
	return lr, nil
}

// startStableRing is StartLocalRing for a test: it fails tb when the
// ring does not start or does not become stable (WaitStable), closing
// what started, and otherwise returns the ring for the caller to close.
func startStableRing(ctx context.Context, tb testing.TB, dir string, count int, base Config, each ...func(i int, c *Config)) *LocalRing {
	tb.Helper()
	lr, err := StartLocalRing(ctx, dir, count, base, each...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := lr.WaitStable(ctx); err != nil {
		lr.Close()
		tb.Fatal(err)
	}
	return lr
}

// Close stops every node.
func (lr *LocalRing) Close() error {
	var errs []error
	for _, n := range lr.Nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// Owner returns the node that owns key according to the ids of all virtual
// servers in the ring, computed here from every node's own list rather than
// asked of the ring's routing.
func (lr *LocalRing) Owner(key id.ID) *Node {
	return lr.nodeOf(ringtest.Owner(ringtest.Vnodes(lr.rings()), key))
}

// nodeOf returns the node running virtual server v.
func (lr *LocalRing) nodeOf(v ring.Node) *Node {
	for _, n := range lr.Nodes {
		if n.self.Peer == v.Peer {
			return n
		}
	}
	return nil
}

// rings returns the nodes' rings.
func (lr *LocalRing) rings() []*ring.Ring {
	rs := make([]*ring.Ring, len(lr.Nodes))
	for i, n := range lr.Nodes {
		rs[i] = n.ring
	}
	return rs
}

// NewDay starts a new crawl day on every node (Node.NewDay): a ring
// formed "yesterday", whose ranges nobody took today.
func (lr *LocalRing) NewDay(ctx context.Context) error {
	for _, n := range lr.Nodes {
		if err := n.NewDay(ctx); err != nil {
			return err
		}
	}
	return nil
}

// NewVersions sums the versions the nodes' crawlers stored.
func (lr *LocalRing) NewVersions() (sum int64) {
	for _, n := range lr.Nodes {
		sum += n.crawler.Stats().NewVersions
	}
	return sum
}

// WaitStable waits until the ring has converged (ringtest.WaitStable):
// every virtual server knows its true predecessor and its whole successor
// list is right, and for probe keys spread over the circle (and every
// virtual-server id) every node's lookup returns the true owning virtual
// server and exactly its node claims the key.
func (lr *LocalRing) WaitStable(ctx context.Context) error {
	return ringtest.WaitStable(ctx, lr.rings())
}

// WaitIdle waits until the whole ring has nothing to crawl or forward
// (ringtest.WaitSettled).
func (lr *LocalRing) WaitIdle(ctx context.Context) error {
	sweep := func() (bool, int64) {
		idle, progress := true, int64(0)
		for _, n := range lr.Nodes {
			idle = n.Idle() && idle
			st := n.fwd.Stats()
			progress += st.Sent + st.Local + n.links.Stats().Received + n.crawler.Stats().FetchedToday
		}
		return idle, progress
	}
	return ringtest.WaitSettled(ctx, sweep, func() string {
		var b strings.Builder
		for _, n := range lr.Nodes {
			cs, fs := n.crawler.Stats(), n.fwd.Stats()
			fmt.Fprintf(&b, "\n  %s: queued %d, in flight %d, fetched %d, errors %v; forward pending %d, in flight %d, last error %q",
				n.self.Addr, cs.Queued, cs.InFlight, cs.FetchedToday, cs.ErrorsByKind, fs.Pending, fs.InFlight, fs.LastError)
		}
		return b.String()
	})
}
