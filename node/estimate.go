package node

import (
	"math/big"

	"github.com/herod-archive/herod/internal/id"
)

// ringSize estimates the number of virtual servers in the ring from this
// node's successor lists: m successors spanning a fraction f of the circle
// suggest m/f virtual servers. It averages over the local virtual servers
// and never answers less than their number.
func (n *Node) ringSize() int {
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
