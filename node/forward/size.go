package forward

import (
	"math/big"
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// SizeEstimate is a Forwarder's Config.RingSize (through RingSize): the
// number of virtual servers in the ring, estimated from a node's
// successor lists (EstimateRingSize) and cached for a second, because the
// forwarder asks for every link it buffers and the estimate moves only
// as the ring does. It is safe for concurrent use.
type SizeEstimate struct {
	// Status returns the node's view of the ring.
	Status func() ring.Status

	mu sync.Mutex
	at time.Time
	n  int
}

// sizeTTL is how long a ring-size estimate is reused.
const sizeTTL = time.Second

// RingSize returns EstimateRingSize of the ring's status, computed at
// most once per second.
func (c *SizeEstimate) RingSize() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 || time.Since(c.at) >= sizeTTL {
		c.n, c.at = EstimateRingSize(c.Status()), time.Now()
	}
	return c.n
}

// EstimateRingSize estimates the number of virtual servers in the ring from a
// node's successor lists: m successors spanning a fraction f of the circle
// suggest m/f virtual servers. It averages over the node's local virtual
// servers in st and never answers less than their number.
func EstimateRingSize(st ring.Status) int {
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
