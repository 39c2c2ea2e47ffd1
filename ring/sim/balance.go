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
	// Chosen: indexes picked with ring.PickIndexes among MaxVirtualServers
	// at each join (Config.ChooseIndexes); otherwise indexes 0..Vnodes-1.
	Chosen bool
	// Max and Min are the largest and smallest real node's keys over the
	// mean; P99 and P1 the 99th and 1st percentiles.
	Max, P99, P1, Min float64
}

type pos struct {
	id   id.ID
	node int
}

func search(ps []pos, key id.ID) int {
	i, _ := slices.BinarySearchFunc(ps, key, func(p pos, k id.ID) int { return p.id.Cmp(k) })
	return i
}

// placements returns the vnode positions of realNodes nodes (addresses
// from Contact). Without choice each runs indexes 0..vnodes-1. With
// choice the nodes join one after another and each takes the vnodes
// indexes ring.PickIndexes selects among [0, maxVS) against the exact
// ring at that moment — what Config.ChooseIndexes does through lookups.
func placements(realNodes, vnodes, maxVS int, choose bool) []pos {
	ps := make([]pos, 0, realNodes*vnodes)
	for n := range realNodes {
		addr := Contact(n).Addr
		idx := make([]int, 0, vnodes)
		if !choose || len(ps) == 0 {
			for v := range vnodes {
				idx = append(idx, v)
			}
		} else {
			cands := make([]ring.Candidate, 0, maxVS)
			for i := range maxVS {
				x := ring.VirtualID(addr, i)
				j := search(ps, x)
				cands = append(cands, ring.Candidate{Index: i, ID: x,
					Pred: ps[(j-1+len(ps))%len(ps)].id, Succ: ps[j%len(ps)].id})
			}
			idx = ring.PickIndexes(cands, vnodes)
		}
		for _, i := range idx {
			x := ring.VirtualID(addr, i)
			ps = slices.Insert(ps, search(ps, x), pos{x, n})
		}
	}
	return ps
}

// LoadBalance places realNodes real nodes with vnodes virtual servers
// each (chosen among maxVS indexes when choose is set), assigns keys keys
// (SHA-1 of "key-i", as URLs are hashed) to their successor — the ring's
// owner rule — and reports keys per real node over the mean.
func LoadBalance(realNodes, vnodes, maxVS, keys int, choose bool) Balance {
	return balanceOf(placements(realNodes, vnodes, maxVS, choose), realNodes, vnodes, keys, choose)
}

// balanceOf assigns keys keys (SHA-1 of "key-i") to their owners among
// the positions ps of realNodes nodes and reports keys per real node over
// the mean.
func balanceOf(ps []pos, realNodes, vnodes, keys int, chosen bool) Balance {
	count := make([]int, realNodes)
	for k := range keys {
		key := id.OfString(fmt.Sprintf("key-%d", k))
		count[ps[search(ps, key)%len(ps)].node]++
	}
	slices.Sort(count)
	mean := float64(keys) / float64(realNodes)
	return Balance{
		RealNodes: realNodes, Vnodes: vnodes, Keys: keys, Chosen: chosen,
		Max: float64(count[len(count)-1]) / mean,
		P99: float64(count[len(count)*99/100]) / mean,
		P1:  float64(count[len(count)/100]) / mean,
		Min: float64(count[0]) / mean,
	}
}

// Rebalanced is LoadBalance after rounds of ring.Rebalance: in each round
// every node, in turn, makes the move ring.BestSwap picks (with exact
// knowledge of every share, where live nodes ask the nodes concerned).
// Moves counts the virtual servers moved in all.
func Rebalanced(realNodes, vnodes, maxVS, keys, rounds int) (Balance, int) {
	ps := placements(realNodes, vnodes, maxVS, true)
	addrs := make([]string, realNodes)
	peers := make([]string, realNodes)
	for n := range realNodes {
		c := Contact(n)
		addrs[n], peers[n] = c.Addr, c.Peer
	}
	index := map[id.ID]int{}
	for n := range realNodes {
		for i := range maxVS {
			index[ring.VirtualID(addrs[n], i)] = i
		}
	}
	unit := 1 / float64(len(ps))
	moves := 0
	for range rounds {
		for n := range realNodes {
			parts := make([]float64, realNodes)
			weight := make([]int, realNodes)
			for j, p := range ps {
				parts[p.node] += ring.Frac(ps[(j-1+len(ps))%len(ps)].id, p.id)
				weight[p.node]++
			}
			shares := map[string]ring.Share{}
			for j := range realNodes {
				shares[peers[j]] = ring.Share{Part: parts[j], Weight: weight[j]}
			}
			var own []ring.OwnVnode
			used := map[int]bool{}
			for j, p := range ps {
				if p.node != n {
					continue
				}
				used[index[p.id]] = true
				own = append(own, ring.OwnVnode{Index: index[p.id], ID: p.id,
					Arc: ring.Frac(ps[(j-1+len(ps))%len(ps)].id, p.id), Heir: peers[ps[(j+1)%len(ps)].node]})
			}
			var cands []ring.Candidate
			for i := range maxVS {
				if used[i] {
					continue
				}
				x := ring.VirtualID(addrs[n], i)
				j := search(ps, x)
				succ := ps[j%len(ps)]
				cands = append(cands, ring.Candidate{Index: i, ID: x, Pred: ps[(j-1+len(ps))%len(ps)].id,
					Succ: succ.id, SuccPeer: peers[succ.node]})
			}
			sw, ok := ring.BestSwap(peers[n], own, cands, shares, unit)
			if !ok {
				continue
			}
			old := ring.VirtualID(addrs[n], sw.From)
			ps = slices.DeleteFunc(ps, func(p pos) bool { return p.id == old })
			x := ring.VirtualID(addrs[n], sw.To)
			ps = slices.Insert(ps, search(ps, x), pos{x, n})
			moves++
		}
	}
	return balanceOf(ps, realNodes, vnodes, keys, true), moves
}
