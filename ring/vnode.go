package ring

import (
	"slices"

	"github.com/herod-archive/herod/internal/id"
)

// vnode is the routing state of one local virtual server. It is guarded
// by Ring.mu.
//
// Invariants: succs is non-empty, sorted clockwise from self, holds no
// duplicate and never holds self unless it is exactly [self] (alone);
// fingers[i], when set, is the best known successor of self+2^i.
type vnode struct {
	self       Node
	pred       *Node
	succs      []Node
	fingers    [id.Bits]*Node
	nextFinger int
	// lastPred is the last predecessor the vnode knew (pred's id while
	// pred is known, set by setPred): while pred is
	// unknown (Chord forgets a dead or silent predecessor before it learns
	// the next), its range is taken to start there (OwnsLastKnown).
	lastPred *id.ID
	// placed is the node that held the range of a vnode placed by a move
	// (a twin's, a rebalancing one), found just before it, until its join
	// reports it through Config.Took: the ring may learn of the vnode
	// before that join, which then finds it already a member.
	placed *Node
}

// rangeOf returns the vnode's current key range.
func (v *vnode) rangeOf() Range {
	if v.pred == nil {
		return Range{End: v.self.ID}
	}
	return Range{Start: v.pred.ID, End: v.self.ID, Known: true}
}

// setSuccs replaces the successor list; an empty list means alone. It
// appends a SuccessorsChanged event to ev when the list changed.
func (v *vnode) setSuccs(s []Node, ev *[]Event) {
	if len(s) == 0 {
		s = []Node{v.self}
	}
	if sameIDs(s, v.succs) {
		return
	}
	old := v.succs
	v.succs = slices.Clone(s)
	if ev != nil {
		*ev = append(*ev, Event{Kind: SuccessorsChanged, Vnode: v.self,
			OldSuccessors: old, NewSuccessors: slices.Clone(s)})
	}
}

// setPred replaces the predecessor (nil: unknown) and appends a
// RangeChanged event when the range changed.
func (v *vnode) setPred(p *Node, ev *[]Event) {
	if p != nil && v.pred != nil && *p == *v.pred || p == nil && v.pred == nil {
		return
	}
	old := v.rangeOf()
	if p != nil {
		c := *p
		p = &c
	}
	v.pred = p
	if p != nil {
		x := p.ID
		v.lastPred = &x
	}
	if ev != nil {
		*ev = append(*ev, Event{Kind: RangeChanged, Vnode: v.self, OldRange: old, NewRange: v.rangeOf()})
	}
}

// alone reports whether the vnode knows no successor but itself.
func (v *vnode) alone() bool { return len(v.succs) == 1 && v.succs[0].ID == v.self.ID }

// setFinger records n as successor(self+2^i) and also for every higher
// finger whose start still falls in (self, n].
func (v *vnode) setFinger(i int, n Node) int {
	if n.ID == v.self.ID {
		v.fingers[i] = nil
		return i + 1
	}
	p := &n
	j := i
	for ; j < id.Bits; j++ {
		if j > i && !id.InHalfOpen(v.self.ID.AddPow2(j), v.self.ID, n.ID) {
			break
		}
		v.fingers[j] = p
	}
	return j
}

// forget removes every entry matching drop from the vnode's tables and
// reports whether the successor list or predecessor changed.
func (v *vnode) forget(drop func(Node) bool, ev *[]Event) {
	if v.pred != nil && drop(*v.pred) {
		v.setPred(nil, ev)
	}
	kept := slices.DeleteFunc(slices.Clone(v.succs), func(n Node) bool { return n.ID != v.self.ID && drop(n) })
	v.setSuccs(kept, ev)
	for i, f := range v.fingers {
		if f != nil && drop(*f) {
			v.fingers[i] = nil
		}
	}
}

// known appends every distinct node in the vnode's tables (pred,
// successors, fingers) to out.
func (v *vnode) known(out []Node) []Node {
	if v.pred != nil {
		out = append(out, *v.pred)
	}
	out = append(out, v.succs...)
	var last *Node
	for _, f := range v.fingers {
		if f != nil && f != last {
			out = append(out, *f)
			last = f
		}
	}
	return out
}

// distinctFingers returns the finger table as distinct entries with the
// first finger index each covers.
func (v *vnode) distinctFingers() []Finger {
	var out []Finger
	var last *Node
	for i, f := range v.fingers {
		if f != nil && (last == nil || f.ID != last.ID) {
			out = append(out, Finger{Index: i, Node: *f})
		}
		last = f
	}
	return out
}

// Finger is one distinct finger table entry: Node is the best known
// successor of vnode+2^Index (and of the following indexes up to the next
// entry).
type Finger struct {
	Index int  `json:"i"`
	Node  Node `json:"node"`
}
