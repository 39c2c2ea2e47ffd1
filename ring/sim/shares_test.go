package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// BenchmarkShares measures keys per real node over the mean, largest
// (max/mean) and smallest (min/mean), for rings of 5 to 1,000 nodes with
// virtual servers chosen by ring.PickIndexes among the IP's 64 indexes
// (the table in docs/ring.md): go test ./ring/sim -run '^$' -bench
// 'Shares$' -benchtime 1x (about 15 s on 2 cores).
func BenchmarkShares(b *testing.B) {
	for _, n := range []int{5, 20, 100, 1000} {
		for _, v := range []int{4, 8, 16, 32} {
			b.Run(fmt.Sprintf("nodes=%d/vnodes=%d", n, v), func(b *testing.B) {
				keys := 400_000
				if n >= 1000 {
					keys = 2_000_000
				}
				var lb Balance
				for range b.N {
					lb = LoadBalance(n, v, 64, keys, true)
				}
				b.ReportMetric(lb.Max, "max/mean")
				b.ReportMetric(lb.Min, "min/mean")
			})
		}
	}
}

// BenchmarkSharesCapacity measures the share of one node that runs twice
// the virtual servers of the others (--vnodes 8 among nodes of 4), over
// the mean of the others (bigshare/mean), on rings of 5 to 1,000 nodes.
func BenchmarkSharesCapacity(b *testing.B) {
	for _, n := range []int{5, 20, 100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var share float64
			for range b.N {
				share = capacityShare(n)
			}
			b.ReportMetric(share, "bigshare/mean")
		})
	}
}

// capacityShare is the keys of a node of 8 virtual servers among n-1 of
// 4 over the mean of the others.
func capacityShare(n int) float64 {
	big := n / 2
	ps := make([]pos, 0, n*8)
	for i := range n {
		want := 4
		if i == big {
			want = 8
		}
		addr := Contact(i).Addr
		var idx []int
		if len(ps) == 0 {
			for v := range want {
				idx = append(idx, v)
			}
		} else {
			cands := make([]ring.Candidate, 0, 64)
			for j := range 64 {
				x := ring.VirtualID(addr, j)
				k := search(ps, x)
				cands = append(cands, ring.Candidate{Index: j, ID: x,
					Pred: ps[(k-1+len(ps))%len(ps)].id, Succ: ps[k%len(ps)].id})
			}
			idx = ring.PickIndexes(cands, want)
		}
		for _, j := range idx {
			x := ring.VirtualID(addr, j)
			ps = slices.Insert(ps, search(ps, x), pos{x, i})
		}
	}
	keys := 400_000
	if n >= 1000 {
		keys = 2_000_000
	}
	count := make([]int, n)
	for k := range keys {
		count[ps[search(ps, id.OfString(fmt.Sprintf("key-%d", k)))%len(ps)].node]++
	}
	others := float64(keys-count[big]) / float64(n-1)
	return float64(count[big]) / others
}

// TestSharesRebalanced prints the share table after rounds of
// ring.Rebalance (issue 17: max ≤ 1.3 and min ≥ 0.7 of the mean at 5, 20
// and 100 nodes) and checks the targets at 5, 20 and 100 nodes. The
// 1,000-node row runs with -sim.
func TestSharesRebalanced(t *testing.T) {
	sizes := []int{5, 20, 100}
	if *full {
		sizes = append(sizes, 1000)
	}
	for _, n := range sizes {
		for _, v := range []int{4, 8} {
			keys := 200_000
			if n >= 1000 {
				keys = 2_000_000
			}
			before := LoadBalance(n, v, 64, keys, true)
			b, moves := Rebalanced(n, v, 64, keys, 4)
			t.Logf("| %d | %d | %.2f / %.2f | %.2f / %.2f | %.2f |", n, v, before.Max, before.Min, b.Max, b.Min, float64(moves)/float64(n))
			if n <= 100 && (b.Max > 1.3 || b.Min < 0.7) {
				t.Errorf("%d nodes, %d virtual servers: max %.2f, min %.2f of the mean after rebalancing", n, v, b.Max, b.Min)
			}
		}
	}
}
