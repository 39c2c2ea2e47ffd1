package ring

import (
	"context"
	"fmt"
	"slices"

	"github.com/herod-archive/herod/internal/id"
)

// Candidate is a possible virtual-server position evaluated against the
// current ring: ID = VirtualID(addr, Index) would fall between Pred and
// Succ.
type Candidate struct {
	Index          int
	ID, Pred, Succ id.ID
}

// score is how evenly the candidate splits its gap: the smaller of the
// two arcs it would leave, min(ID-Pred, Succ-ID).
func (c Candidate) score() id.ID {
	a, b := dist(c.Pred, c.ID), dist(c.ID, c.Succ)
	if b.Less(a) {
		return b
	}
	return a
}

// PickIndexes returns the indexes of the want candidates that best split
// the gaps they fall in (largest min(ID-Pred, Succ-ID) first), in
// increasing order. This is the "k choices" placement: each joining node
// evaluates every id it may use and takes those that cut the widest
// arcs, which keeps the keys per real node close to the mean (see
// ring/sim). Ties go to the lower index.
func PickIndexes(cands []Candidate, want int) []int {
	c := slices.Clone(cands)
	slices.SortStableFunc(c, func(x, y Candidate) int { return y.score().Cmp(x.score()) })
	out := make([]int, 0, want)
	for _, x := range c[:min(want, len(c))] {
		out = append(out, x.Index)
	}
	slices.Sort(out)
	return out
}

// chooseIndexes evaluates every allowed index through via and switches
// the local vnodes to the best VirtualServers of them, skipping the
// indexes other nodes at the same IP already run (their ids are this IP's
// too). It runs before the node's first join, while no other node knows
// its vnodes.
func (r *Ring) chooseIndexes(ctx context.Context, via Contact) error {
	cands := make([]Candidate, 0, r.cfg.MaxVirtualServers)
	for i := range r.cfg.MaxVirtualServers {
		x := VirtualID(r.cfg.Self.Addr, i)
		owner, _, err := r.lookup(ctx, x, &via)
		if err != nil {
			return fmt.Errorf("ring choose indexes: %w", err)
		}
		pred, _, err := r.neighbors(ctx, owner)
		if err != nil {
			return fmt.Errorf("ring choose indexes: %w", err)
		}
		if owner.ID == x && owner.Peer != r.cfg.Self.Peer {
			continue // another node at this IP runs index i
		}
		c := Candidate{Index: i, ID: x, Pred: owner.ID, Succ: owner.ID}
		if pred != nil {
			c.Pred = pred.ID
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return fmt.Errorf("ring choose indexes: %w: every one of the %d positions of %s is taken by other nodes at that IP",
			ErrIPFull, r.cfg.MaxVirtualServers, r.cfg.Self.Addr)
	}
	if len(cands) < r.cfg.VirtualServers {
		r.log.Warn("ring: fewer free positions at this IP than virtual servers asked for",
			"addr", r.cfg.Self.Addr, "free", len(cands), "asked", r.cfg.VirtualServers)
	}
	idx := PickIndexes(cands, r.cfg.VirtualServers)
	r.mu.Lock()
	r.setVnodes(idx)
	r.mu.Unlock()
	r.log.Info("ring: chose virtual server indexes", "indexes", idx)
	return nil
}
