package ringtest

import (
	"fmt"
	"slices"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Vnodes returns every vnode of rs in id order.
func Vnodes(rs []*ring.Ring) []ring.Node {
	var all []ring.Node
	for _, r := range rs {
		all = append(all, r.Vnodes()...)
	}
	slices.SortFunc(all, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
	return all
}

// Owner returns the true successor of key among all, which must be
// sorted by id and non-empty.
func Owner(all []ring.Node, key id.ID) ring.Node {
	i, _ := slices.BinarySearchFunc(all, key, func(n ring.Node, k id.ID) int { return n.ID.Cmp(k) })
	return all[i%len(all)]
}

// Linked reports whether every vnode of rs has its true neighbours as
// first successor and predecessor (successor lists may still be stale).
func Linked(rs []*ring.Ring) error { return check(rs, false) }

// Consistent reports whether rs form exactly one correct Chord ring:
// every vnode's first successor and predecessor are its true neighbours
// among the vnodes of rs, and every successor list is the true run of
// following vnodes up to its length.
func Consistent(rs []*ring.Ring) error { return check(rs, true) }

func check(rs []*ring.Ring, lists bool) error {
	all := Vnodes(rs)
	pos := make(map[id.ID]int, len(all))
	for i, n := range all {
		pos[n.ID] = i
	}
	for _, r := range rs {
		for _, v := range r.Status().Vnodes {
			i := pos[v.ID]
			if len(all) == 1 {
				continue
			}
			if len(v.Successors) == 0 {
				return fmt.Errorf("%s: no successors", v.Node)
			}
			for k, s := range v.Successors {
				if k >= len(all)-1 || k > 0 && !lists {
					break
				}
				if want := all[(i+1+k)%len(all)]; s.ID != want.ID {
					return fmt.Errorf("%s: successor %d is %s, want %s", v.Node, k, s, want)
				}
			}
			wantP := all[(i+len(all)-1)%len(all)]
			if v.Predecessor == nil || v.Predecessor.ID != wantP.ID {
				return fmt.Errorf("%s: predecessor %v, want %s", v.Node, v.Predecessor, wantP)
			}
		}
	}
	return nil
}
