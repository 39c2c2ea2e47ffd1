package ring_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/memnet"
	"github.com/herod-archive/herod/ring/ringtest"
)

// cluster is a set of real nodes on one memnet, driven round by round.
type cluster struct {
	t      *testing.T
	net    *memnet.Network
	clock  *memnet.Clock
	rings  []*ring.Ring
	dead   map[int]bool
	vn     int
	choose bool
	moving func(ctx context.Context, v ring.Node, r ring.Range, heir ring.Node) // Config.Moving of every ring
}

func contactOf(i int) ring.Contact {
	return ring.Contact{Peer: fmt.Sprintf("peer-%03d", i), Addr: fmt.Sprintf("10.0.%d.%d:4001", i/250, i%250+1)}
}

func newCluster(t *testing.T, n, vn int) *cluster {
	t.Helper()
	c := &cluster{t: t}
	c.init(n, vn, false)
	return c
}

// init starts n nodes of vn virtual servers; with choose they pick their
// indexes at join (Config.ChooseIndexes).
func (c *cluster) init(n, vn int, choose bool) {
	c.net, c.clock = memnet.New(memnet.Config{Seed: 1}), memnet.NewClock(time.Unix(1e9, 0))
	c.dead, c.vn, c.choose = map[int]bool{}, vn, choose
	for i := range n {
		c.add(contactOf(i))
	}
}

func (c *cluster) add(self ring.Contact) *ring.Ring {
	c.t.Helper()
	r, err := ring.New(ring.Config{Self: self, VirtualServers: c.vn, Clock: c.clock, ChooseIndexes: c.choose, Moving: c.moving}, c.net.Transport(self))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { r.Close() })
	c.rings = append(c.rings, r)
	return r
}

// joinAll joins every node but the first through node 0, with a round
// after each join.
func (c *cluster) joinAll() {
	c.t.Helper()
	for i := 1; i < len(c.rings); i++ {
		if err := c.rings[i].Join(context.Background(), c.rings[0].Self()); err != nil {
			c.t.Fatalf("join %d: %v", i, err)
		}
		c.rounds(1)
	}
}

func (c *cluster) live() []*ring.Ring {
	var out []*ring.Ring
	for i, r := range c.rings {
		if !c.dead[i] {
			out = append(out, r)
		}
	}
	return out
}

func (c *cluster) rounds(k int) {
	for range k {
		for _, r := range c.live() {
			r.Maintain(context.Background())
		}
		c.clock.Advance(ring.DefaultStabilizeInterval)
	}
}

func (c *cluster) kill(i int) {
	c.net.Kill(c.rings[i].Self().Addr)
	c.dead[i] = true
}

func liveVnodes(rs []*ring.Ring) []ring.Node { return ringtest.Vnodes(rs) }

func consistent(rs []*ring.Ring) error { return ringtest.Consistent(rs) }

func owner(all []ring.Node, key id.ID) ring.Node { return ringtest.Owner(all, key) }

func keyN(i int) id.ID { return id.OfString(fmt.Sprintf("key-%d", i)) }

// checkLookups looks up n keys from every live node and compares with
// the true owners.
func checkLookups(t *testing.T, rs []*ring.Ring, n int) {
	t.Helper()
	all := liveVnodes(rs)
	for _, r := range rs {
		for k := range n {
			key := keyN(k)
			got, err := r.Lookup(context.Background(), key)
			if err != nil {
				t.Fatalf("%s lookup %s: %v", r.Self(), key.Short(), err)
			}
			if want := owner(all, key); got.ID != want.ID {
				t.Fatalf("%s lookup %s = %s, want %s", r.Self(), key.Short(), got, want)
			}
		}
	}
}

func waitConsistent(t *testing.T, c *cluster, max int) int {
	t.Helper()
	for i := 0; i <= max; i++ {
		if consistent(c.live()) == nil {
			return i
		}
		c.rounds(1)
	}
	t.Fatalf("not consistent after %d rounds: %v", max, consistent(c.live()))
	return 0
}
