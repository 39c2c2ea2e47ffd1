package ring

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/herod-archive/herod/internal/id"
)

// Candidate is a possible virtual-server position evaluated against the
// current ring: ID = VirtualID(addr, Index) would fall between Pred and
// Succ.
type Candidate struct {
	Index          int
	ID, Pred, Succ id.ID
	// SuccPeer is the real node whose virtual server Succ would give the
	// range (Pred, ID] up (Rebalance), when known.
	SuccPeer string
	succ     Node
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
	cands, err := r.candidates(ctx, via, nil)
	if err != nil {
		return fmt.Errorf("ring choose indexes: %w", err)
	}
	if len(cands) < r.cfg.VirtualServers {
		r.log.Warn("ring: fewer free positions at this IP than virtual servers asked for",
			"addr", r.cfg.Self.Addr, "free", len(cands), "asked", r.cfg.VirtualServers)
	}
	idx := PickIndexes(cands, r.cfg.VirtualServers)
	if len(cands) < r.cfg.MaxVirtualServers {
		// Other nodes run at this IP: those joining at this moment see the
		// same ring and would pick the same best indexes (twins). Each
		// picks among the 2k best by an order of its own instead;
		// rebalancing evens out what this costs.
		idx = pickSpread(cands, r.cfg.VirtualServers, r.cfg.Self.Peer)
	}
	r.mu.Lock()
	r.setVnodes(idx)
	r.mu.Unlock()
	r.log.Info("ring: chose virtual server indexes", "indexes", idx)
	return nil
}

// candidates evaluates, through via, every allowed index not in skip and
// not run by another node at this IP (the owner of its id is that id,
// at another peer).
func (r *Ring) candidates(ctx context.Context, via Contact, skip map[int]bool) ([]Candidate, error) {
	cands := make([]Candidate, 0, r.cfg.MaxVirtualServers)
	for i := range r.cfg.MaxVirtualServers {
		if skip[i] {
			continue
		}
		x := VirtualID(r.cfg.Self.Addr, i)
		owner, _, err := r.lookup(ctx, x, &via)
		if err != nil {
			return nil, err
		}
		pred, _, err := r.neighbors(ctx, owner)
		if err != nil {
			return nil, err
		}
		if owner.ID == x && owner.Peer != r.cfg.Self.Peer {
			continue // another node at this IP runs index i
		}
		c := Candidate{Index: i, ID: x, Pred: owner.ID, Succ: owner.ID, SuccPeer: owner.Peer, succ: owner}
		if pred != nil {
			c.Pred = pred.ID
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("%w: every one of the %d positions of %s is taken by other nodes at that IP",
			ErrIPFull, r.cfg.MaxVirtualServers, r.cfg.Self.Addr)
	}
	return cands, nil
}

// replaceIndexes moves the local vnodes with the given ids, which another
// node at this IP turned out to run too (it joined at the same moment
// and chose the same index), to the best free indexes: the node runs
// other positions instead, and no id is held by two nodes. The moved
// vnodes' old ranges are published as no longer known.
func (r *Ring) replaceIndexes(ctx context.Context, via Contact, lost []id.ID) error {
	r.mu.Lock()
	skip := map[int]bool{}
	for _, v := range r.vnodes {
		skip[v.self.Index] = true
	}
	r.mu.Unlock()
	cands, err := r.candidates(ctx, via, skip)
	if err != nil {
		return fmt.Errorf("ring replace indexes: %w", err)
	}
	// Twins that move at the same moment see the same candidates: each
	// picks by an order of its own, among more than a join does, or they
	// would meet again at the same best indexes.
	idx := pickSpreadAmong(cands, len(lost), max(2*len(lost), 8), r.cfg.Self.Peer)
	var ev []Event
	r.mu.Lock()
	gone := map[id.ID]bool{}
	for _, x := range lost[:len(idx)] {
		gone[x] = true
		if v := r.local(x); v != nil {
			v.setPred(nil, &ev)
		}
	}
	r.vnodes = slices.DeleteFunc(r.vnodes, func(v *vnode) bool { return gone[v.self.ID] })
	for _, v := range r.vnodes {
		v.forget(func(n Node) bool { return gone[n.ID] && n.Peer == r.cfg.Self.Peer }, &ev)
	}
	for _, i := range idx {
		n := Node{ID: VirtualID(r.cfg.Self.Addr, i), Contact: r.cfg.Self, Index: i}
		nv := &vnode{self: n}
		for _, c := range cands {
			if c.Index == i && c.succ.Peer != "" {
				held := c.succ
				nv.placed = &held
			}
		}
		r.vnodes = append(r.vnodes, nv)
	}
	slices.SortFunc(r.vnodes, func(a, b *vnode) int { return a.self.ID.Cmp(b.self.ID) })
	local := r.localNodes()
	for _, v := range r.vnodes {
		if slices.Contains(idx, v.self.Index) {
			v.setSuccs(r.trim(sortFrom(v.self.ID, local)), nil)
		}
	}
	r.mu.Unlock()
	r.events.publish(ev)
	r.n.twins.Add(uint64(len(idx)))
	r.log.Warn("ring: another node at this IP chose the same virtual server index at the same moment; moved to other indexes",
		"lost", len(lost), "indexes", idx)
	return nil
}

// pickSpread returns want indexes among the 2·want best candidates (by
// PickIndexes' score), chosen in an order derived from peer: two nodes at
// one IP that join at once rarely pick the same.
func pickSpread(cands []Candidate, want int, peer string) []int {
	return pickSpreadAmong(cands, want, 2*want, peer)
}

// pickSpreadAmong is pickSpread among the pool best candidates.
func pickSpreadAmong(cands []Candidate, want, pool int, peer string) []int {
	best := PickIndexes(cands, min(pool, len(cands)))
	slices.SortFunc(best, func(a, b int) int {
		return id.OfString(peer + "#" + strconv.Itoa(a)).Cmp(id.OfString(peer + "#" + strconv.Itoa(b)))
	})
	best = best[:min(want, len(best))]
	slices.Sort(best)
	return best
}
