package sim

import (
	"fmt"
	"slices"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Balance is the distribution of keys over real nodes, as ratios to the
// mean number of keys per real node.
type Balance struct {
	RealNodes, Vnodes, Keys int
	Max, P99, P1            float64
}

// LoadBalance places realNodes real nodes with vnodes virtual servers
// each at their VirtualID positions (addresses from Contact), assigns
// keys keys (SHA-1 of "key-i", as URLs are hashed) to their successor —
// the ring's owner rule — and reports keys per real node over the mean.
func LoadBalance(realNodes, vnodes, keys int) Balance {
	type pos struct {
		id   id.ID
		node int
	}
	ps := make([]pos, 0, realNodes*vnodes)
	for n := range realNodes {
		addr := Contact(n).Addr
		for v := range vnodes {
			ps = append(ps, pos{ring.VirtualID(addr, v), n})
		}
	}
	slices.SortFunc(ps, func(a, b pos) int { return a.id.Cmp(b.id) })
	count := make([]int, realNodes)
	for k := range keys {
		key := id.OfString(fmt.Sprintf("key-%d", k))
		i, _ := slices.BinarySearchFunc(ps, key, func(p pos, k id.ID) int { return p.id.Cmp(k) })
		count[ps[i%len(ps)].node]++
	}
	slices.Sort(count)
	mean := float64(keys) / float64(realNodes)
	return Balance{
		RealNodes: realNodes, Vnodes: vnodes, Keys: keys,
		Max: float64(count[len(count)-1]) / mean,
		P99: float64(count[len(count)*99/100]) / mean,
		P1:  float64(count[len(count)/100]) / mean,
	}
}
