package node

import (
	"math/big"
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// sizeEstimate caches ringSize for a second: the forwarder asks it for
// every link it buffers, and the estimate moves only as the ring does.
type sizeEstimate struct {
	mu sync.Mutex
	at time.Time
	n  int
}

// sizeTTL is how long a ring-size estimate is reused.
const sizeTTL = time.Second

// ringSize returns estimateRingSize, computed at most once per sizeTTL.
func (n *Node) ringSize() int {
	c := &n.size
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 || time.Since(c.at) >= sizeTTL {
		c.n, c.at = n.estimateRingSize(), time.Now()
	}
	return c.n
}

// estimateRingSize estimates the number of virtual servers in the ring from this
// node's successor lists: m successors spanning a fraction f of the circle
// suggest m/f virtual servers. It averages over the local virtual servers
// and never answers less than their number.
func (n *Node) estimateRingSize() int {
	st := n.ring.Status()
	circle := new(big.Float).SetInt(new(big.Int).Lsh(big.NewInt(1), id.Bits))
	var sum float64
	var samples int
	for _, v := range st.Vnodes {
		m := len(v.Successors)
		if m == 0 {
			continue
		}
		span := id.Distance(v.ID, v.Successors[m-1].ID)
		if span.Sign() == 0 {
			continue
		}
		frac, _ := new(big.Float).Quo(new(big.Float).SetInt(span), circle).Float64()
		sum += float64(m) / frac
		samples++
	}
	est := len(st.Vnodes)
	if samples > 0 {
		est = max(est, int(sum/float64(samples)+0.5))
	}
	return est
}
