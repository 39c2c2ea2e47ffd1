package replication

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// circle is a ring of virtual servers, in id order, answering Successors
// as a settled ring does: the owner of key and the virtual servers after
// it, up to k distinct real nodes. It counts the lookups.
type circle struct {
	vs      []ring.Node
	lookups int
}

func (c *circle) Status() ring.Status { return ring.Status{} }

func (c *circle) Successors(_ context.Context, key id.ID, k int) ([]ring.Node, error) {
	c.lookups++
	i, _ := slices.BinarySearchFunc(c.vs, key, func(v ring.Node, key id.ID) int { return v.ID.Cmp(key) })
	var out []ring.Node
	seen := map[string]bool{}
	for j := 0; j < len(c.vs) && len(seen) < k; j++ {
		v := c.vs[(i+j)%len(c.vs)]
		out = append(out, v)
		seen[v.Peer] = true
	}
	return out, nil
}

// TestNonHeldEnd: on random rings, the end of the part of a gap between
// two of this node's ranges that it holds no copies of is found as the
// walk owner by owner finds it, in O(log n) lookups.
func TestNonHeldEnd(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 40))
	step := new(big.Int).Lsh(big.NewInt(1), 150)
	worst := 0 // the largest gap, in virtual servers
	defer func() { t.Logf("largest gap: %d virtual servers", worst) }()
	for trial := range 200 {
		peers := 3 + rnd.IntN(100)
		n := peers * (1 + rnd.IntN(8))
		c := &circle{}
		for i := range n {
			pos := new(big.Int).Mul(step, big.NewInt(int64(i)))
			pos.Add(pos, big.NewInt(int64(rnd.IntN(1<<20))))
			c.vs = append(c.vs, ring.Node{ID: id.FromBig(pos), Contact: ring.Contact{Peer: fmt.Sprint("p", rnd.IntN(peers))}})
		}
		me := c.vs[rnd.IntN(n)].Peer
		r := New(Config{Self: ring.Contact{Peer: me}, Ring: c})
		held := func(w int) bool { // whether me holds w's range, walking
			seen := map[string]bool{}
			for j := 0; len(seen) < r.k(); j++ {
				v := c.vs[(w+j)%n]
				if v.Peer == me {
					return true
				}
				seen[v.Peer] = true
			}
			return false
		}
		for i, v := range c.vs {
			if v.Peer != me || c.vs[(i+1)%n].Peer == me {
				continue // not the start of a gap
			}
			j := i + 1 // the gap: the vnodes from i+1 to the next of me, excluded
			for c.vs[j%n].Peer != me {
				j++
			}
			a, b := v.ID, c.vs[(j-1)%n].ID
			want := a
			for w := i + 1; w < j && !held(w%n); w++ {
				want = c.vs[w%n].ID
			}
			c.lookups = 0
			worst = max(worst, j-i-1)
			p, ok := r.nonHeldEnd(context.Background(), a, b)
			if !ok || p != want {
				t.Fatalf("trial %d, gap after vnode %d (%d vnodes, %d peers): end %s ok %v, want %s", trial, i, n, peers, p.Short(), ok, want.Short())
			}
			if bound := 4 * (1 + bitsLen(j-i)); c.lookups > bound {
				t.Errorf("trial %d: %d lookups for a gap of %d vnodes (bound %d)", trial, c.lookups, j-i-1, bound)
			}
		}
	}
}

func bitsLen(n int) int { return big.NewInt(int64(n)).BitLen() }
