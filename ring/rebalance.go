package ring

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/herod-archive/herod/internal/id"
)

// Fair shares. Choosing the indexes that split the widest gaps at a join
// (PickIndexes) leaves a ring of 5 or 20 nodes with one node holding 2×
// the mean and another half of it, because early nodes are never
// relieved. So every node also rebalances from time to time (Rebalance):
// when its part of the circle is more than RebalanceTolerance off its
// target — its weight (virtual servers) times the circle's part per
// virtual server — it moves at most one virtual server to another of its
// IP's indexes, the move that most reduces Σ (part − target)² over the
// nodes the move changes (itself, the node that inherits the range it
// leaves, the node whose range it enters). Minimizing the squared
// deviation of everyone it touches, not its own alone, is what makes the
// ring converge: a node that only chased its own target pushed its
// surplus onto neighbours, who pushed it on (ring/sim). Ids stay
// VirtualID(IP, index): a node still cannot choose where it sits, only
// which of its 64 fixed positions it runs.

// RebalanceTolerance is how far a node's part may be from its target
// before it moves a virtual server.
const RebalanceTolerance = 0.10

// minGainRatio: a move must cut the squared deviation it touches by at
// least this share, so nodes do not trade ranges back and forth for noise.
const minGainRatio = 0.05

// Share is a real node's part of the key circle (a fraction, 0..1) and
// its weight (its number of virtual servers).
type Share struct {
	Part   float64
	Weight int
}

// OwnVnode is one of the rebalancing node's virtual servers: its index,
// the part of the circle it owns, and the peer that would inherit that
// range if it left (its successor's).
type OwnVnode struct {
	Index int
	ID    id.ID
	Arc   float64
	Heir  string
}

// Swap moves the virtual server at index From to index To. Gain is the
// reduction of the squared deviation it was chosen for.
type Swap struct {
	From, To int
	Gain     float64
}

// Frac returns the clockwise distance from a to b as a fraction of the
// circle (b == a is the whole circle).
func Frac(a, b id.ID) float64 {
	d := dist(a, b)
	if d.IsZero() {
		return 1
	}
	return float64(binary.BigEndian.Uint64(d[:8])) / math.Exp2(64)
}

// BestSwap returns the move of one of self's virtual servers (own) to
// one of cands that most reduces Σ (part − weight·unit)² over the nodes it
// changes, given what self knows of their shares (shares, with self's own
// under self), and whether a move is worth making: self's part is outside
// RebalanceTolerance of its target and the move cuts the deviation it
// touches by at least minGainRatio. unit is the circle's part per virtual
// server (1 / virtual servers in the ring). A candidate's arc is
// Frac(Pred, ID), taken from the owner of Succ, whose peer is cands'
// SuccPeer.
func BestSwap(self string, own []OwnVnode, cands []Candidate, shares map[string]Share, unit float64) (Swap, bool) {
	me, ok := shares[self]
	if !ok || len(own) == 0 || unit <= 0 {
		return Swap{}, false
	}
	target := func(s Share) float64 { return float64(s.Weight) * unit }
	if math.Abs(me.Part-target(me)) <= RebalanceTolerance*target(me) {
		return Swap{}, false
	}
	dev := func(parts map[string]float64) float64 {
		var sum float64
		for p, x := range parts {
			d := x - target(shares[p])
			sum += d * d
		}
		return sum
	}
	var best Swap
	var bestBefore float64
	for _, a := range own {
		for _, c := range cands {
			if c.Succ == a.ID || c.Pred == a.ID || c.SuccPeer == "" {
				continue // c would take part of a's own range: not independent
			}
			if _, ok := shares[a.Heir]; !ok {
				continue
			}
			if _, ok := shares[c.SuccPeer]; !ok {
				continue
			}
			before := map[string]float64{}
			for _, p := range []string{self, a.Heir, c.SuccPeer} {
				before[p] = shares[p].Part
			}
			after := maps(before)
			arc := Frac(c.Pred, c.ID)
			after[self] -= a.Arc
			after[a.Heir] += a.Arc
			after[c.SuccPeer] -= arc
			after[self] += arc
			b, g := dev(before), dev(before)-dev(after)
			if g > best.Gain {
				best, bestBefore = Swap{From: a.Index, To: c.Index, Gain: g}, b
			}
		}
	}
	if best.Gain <= 0 || best.Gain < minGainRatio*bestBefore {
		return Swap{}, false
	}
	return best, true
}

func maps(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Move is a virtual server Rebalance moved: it left From and runs To now,
// whose range Former held before.
type Move struct {
	From, To, Former Node
}

// unitEstimate estimates the circle's part per virtual server from the
// local vnodes' successor lists: the arcs they span over the number of
// virtual servers in them.
func (r *Ring) unitEstimate() float64 {
	var span float64
	var count int
	for _, v := range r.vnodes {
		if len(v.succs) == 0 || v.succs[len(v.succs)-1].ID == v.self.ID {
			continue
		}
		span += Frac(v.self.ID, v.succs[len(v.succs)-1].ID)
		count += len(v.succs)
	}
	if count == 0 {
		return 0
	}
	return span / float64(count)
}

// myShare returns this node's vnodes with their arcs and heirs, and its
// share; ok is false while a vnode's predecessor is unknown.
func (r *Ring) myShare() ([]OwnVnode, Share, bool) {
	var own []OwnVnode
	var part float64
	for _, v := range r.vnodes {
		if v.pred == nil || len(v.succs) == 0 {
			return nil, Share{}, false
		}
		arc := Frac(v.pred.ID, v.self.ID)
		own = append(own, OwnVnode{Index: v.self.Index, ID: v.self.ID, Arc: arc, Heir: v.succs[0].Peer})
		part += arc
	}
	return own, Share{Part: part, Weight: len(r.vnodes)}, true
}

// shareOf asks the real node behind n for its share (OpShare).
func (r *Ring) shareOf(ctx context.Context, n Node) (Share, error) {
	reply, err := r.callRetry(ctx, n.Contact, &Message{Op: OpShare, To: n.ID})
	if err != nil {
		return Share{}, err
	}
	if len(reply.Nodes) == 0 || len(reply.Nodes) != len(reply.Owners) {
		return Share{}, fmt.Errorf("ring share of %s: malformed reply", n)
	}
	var s Share
	for i, v := range reply.Nodes {
		if v.Peer != n.Peer {
			return Share{}, fmt.Errorf("ring share of %s: names another peer", n)
		}
		s.Part += Frac(reply.Owners[i].ID, v.ID)
	}
	s.Weight = len(reply.Nodes)
	return s, nil
}

// handleShare answers OpShare: the local vnodes (Nodes) and their
// predecessors (Owners), for those whose predecessor is known.
func (r *Ring) handleShare() *Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left {
		return &Message{Err: ErrCodeNoVnode}
	}
	reply := &Message{Op: OpShare}
	for _, v := range r.vnodes {
		if v.pred != nil {
			reply.Nodes = append(reply.Nodes, v.self)
			reply.Owners = append(reply.Owners, *v.pred)
		}
	}
	return reply
}

// Rebalance moves at most one local virtual server to another of this
// IP's indexes when this node's part of the circle is off its target
// (see BestSwap), and returns the move. It asks the nodes a move would
// change for their shares and evaluates every free index by a lookup, so
// it is meant to run every few minutes, not every stabilization round.
// It does nothing with fixed indexes (Config.ChooseIndexes false).
func (r *Ring) Rebalance(ctx context.Context) ([]Move, error) {
	if !r.moving.TryLock() {
		return nil, nil
	}
	defer r.moving.Unlock()
	r.mu.Lock()
	if !r.cfg.ChooseIndexes || !r.joined || r.left {
		r.mu.Unlock()
		return nil, nil
	}
	own, me, ok := r.myShare()
	unit := r.unitEstimate()
	var via Contact
	if len(r.vnodes) > 0 && len(r.vnodes[0].succs) > 0 {
		via = r.vnodes[0].succs[0].Contact
	}
	r.mu.Unlock()
	if !ok || unit == 0 || via.Peer == "" || via.Peer == r.cfg.Self.Peer {
		return nil, nil
	}
	if math.Abs(me.Part-float64(me.Weight)*unit) <= RebalanceTolerance*float64(me.Weight)*unit {
		return nil, nil
	}
	skip := map[int]bool{}
	for _, v := range own {
		skip[v.Index] = true
	}
	cands, err := r.candidates(ctx, via, skip)
	if err != nil {
		return nil, fmt.Errorf("ring rebalance: %w", err)
	}
	shares := map[string]Share{r.cfg.Self.Peer: me}
	nodes := map[string]Node{}
	for _, c := range cands {
		nodes[c.SuccPeer] = c.succ
	}
	r.mu.Lock()
	for _, v := range r.vnodes {
		nodes[v.succs[0].Peer] = v.succs[0]
	}
	r.mu.Unlock()
	for p, n := range nodes {
		if p == r.cfg.Self.Peer || p == "" {
			continue
		}
		if s, err := r.shareOf(ctx, n); err == nil {
			shares[p] = s
		}
	}
	sw, ok := BestSwap(r.cfg.Self.Peer, own, cands, shares, unit)
	if !ok {
		return nil, nil
	}
	var from, former Node
	for _, v := range own {
		if v.Index == sw.From {
			from = Node{ID: v.ID, Contact: r.cfg.Self, Index: v.Index}
		}
	}
	for _, c := range cands {
		if c.Index == sw.To {
			former = c.succ
		}
	}
	if err := r.moveIndex(ctx, via, from.ID, sw.To, former); err != nil {
		return nil, fmt.Errorf("ring rebalance: %w", err)
	}
	to := Node{ID: VirtualID(r.cfg.Self.Addr, sw.To), Contact: r.cfg.Self, Index: sw.To}
	r.n.rebalances.Add(1)
	r.log.Info("ring: moved a virtual server for a fairer share", "from", from, "to", to,
		"part", me.Part, "target", float64(me.Weight)*unit)
	return []Move{{From: from, To: to, Former: former}}, nil
}

// moveIndex moves the local vnode old to index idx, whose range held
// holds: it leaves the ring there gracefully (its neighbours link past
// it, its successor inherits its range) and joins at idx through via.
func (r *Ring) moveIndex(ctx context.Context, via Contact, old id.ID, idx int, held Node) error {
	r.mu.Lock()
	v := r.local(old)
	if v == nil {
		r.mu.Unlock()
		return fmt.Errorf("no local virtual server %s", old.Short())
	}
	self, pred, succs, rg := v.self, v.pred, slices.Clone(v.succs), v.rangeOf()
	r.mu.Unlock()
	if r.cfg.Moving != nil && rg.Known {
		for _, s := range succs {
			if s.ID != self.ID {
				if s.Peer != r.cfg.Self.Peer {
					r.cfg.Moving(ctx, self, rg, s)
				}
				break
			}
		}
	}
	r.leaveVnode(ctx, self, pred, succs)
	var ev []Event
	r.mu.Lock()
	v.setPred(nil, &ev)
	r.vnodes = slices.DeleteFunc(r.vnodes, func(u *vnode) bool { return u.self.ID == old })
	for _, u := range r.vnodes {
		u.forget(func(n Node) bool { return n.ID == old && n.Peer == r.cfg.Self.Peer }, &ev)
	}
	n := Node{ID: VirtualID(r.cfg.Self.Addr, idx), Contact: r.cfg.Self, Index: idx}
	placed := &vnode{self: n}
	if held.Peer != "" {
		placed.placed = &held
	}
	r.vnodes = append(r.vnodes, placed)
	slices.SortFunc(r.vnodes, func(a, b *vnode) int { return a.self.ID.Cmp(b.self.ID) })
	nv := r.local(n.ID)
	nv.setSuccs(r.trim(sortFrom(n.ID, r.localNodes())), nil)
	r.mu.Unlock()
	r.events.publish(ev)
	if _, err := r.joinVnodes(ctx, via); err != nil {
		return err
	}
	return nil
}

// leaveVnode tells a local virtual server's remote neighbours that it
// leaves: its predecessor links to its successors, its successor adopts
// its predecessor (as Leave does for every virtual server).
func (r *Ring) leaveVnode(ctx context.Context, self Node, pred *Node, succs []Node) {
	var heirs []Node
	for _, s := range succs {
		if s.ID != self.ID {
			heirs = append(heirs, s)
		}
	}
	if pred != nil && pred.Peer != r.cfg.Self.Peer {
		_, _ = r.call(ctx, pred.Contact, &Message{Op: OpLeave, To: pred.ID, From: &self, Nodes: heirs})
	}
	if len(heirs) > 0 && heirs[0].Peer != r.cfg.Self.Peer {
		_, _ = r.call(ctx, heirs[0].Contact, &Message{Op: OpLeave, To: heirs[0].ID, From: &self, Pred: pred})
	}
}
