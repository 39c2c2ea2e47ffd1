package ring

import (
	"context"
	"slices"

	"github.com/herod-archive/herod/internal/id"
)

// Maintain runs one maintenance round for every local vnode: stabilize
// (adopt the successor's predecessor if closer, refresh the successor
// list, notify the successor), check-predecessor, fix one finger batch,
// then probe one formerly dead peer for ring merging. Start calls it on a
// jittered timer; simulations and tests call it directly to run rounds
// deterministically.
func (r *Ring) Maintain(ctx context.Context) {
	if r.closed.Load() {
		return
	}
	r.mu.Lock()
	if r.left {
		r.mu.Unlock()
		return
	}
	vs := slices.Clone(r.vnodes)
	// Entries in this node's name for a virtual server it does not run
	// (its own before a restart with other indexes, or before a move,
	// learned back from others' tables) are stale: drop them, or one held
	// as a predecessor refuses the true predecessor's notify.
	var ev []Event
	for _, v := range r.vnodes {
		v.forget(func(n Node) bool { return n.Peer == r.cfg.Self.Peer && r.local(n.ID) == nil }, &ev)
	}
	r.mu.Unlock()
	r.events.publish(ev)
	r.n.rounds.Add(1)
	var twins []id.ID
	var via Contact
	for _, v := range vs {
		if succ, twin := r.stabilize(ctx, v); twin {
			twins, via = append(twins, v.self.ID), succ
		}
	}
	if len(twins) > 0 {
		r.moveTwins(ctx, via, twins)
	}
	r.checkPredecessors(ctx)
	for _, v := range vs {
		r.findPredecessor(ctx, v)
		r.fixFinger(ctx, v)
	}
	r.probeGrave(ctx)
	r.protect()
}

// stabilize refreshes v's successor list from its first live successor.
// It reports a twin: the successor holds, as its predecessor, another
// peer's virtual server with v's id (two nodes at one IP chose one index
// at once and joined through different successors); the successor keeps
// the first notifier, so v is the one to move (moveTwins).
func (r *Ring) stabilize(ctx context.Context, v *vnode) (Contact, bool) {
	r.mu.Lock()
	self := v.self
	succs := slices.Clone(v.succs)
	if v.alone() {
		// Someone may have notified us, or tables may still know nodes.
		var known []Node
		for _, u := range r.vnodes {
			known = u.known(known)
		}
		known = slices.DeleteFunc(known, func(n Node) bool { return n.Peer != r.cfg.Self.Peer && r.isSuspect(n.Peer) })
		succs = sortFrom(self.ID, known)
	}
	r.mu.Unlock()

	var list []Node
	for _, s := range succs {
		if s.ID == self.ID {
			continue
		}
		pred, ss, err := r.neighbors(ctx, s)
		if err != nil {
			continue
		}
		if pred != nil && pred.ID == self.ID && pred.Peer != r.cfg.Self.Peer && r.cfg.ChooseIndexes {
			return s.Contact, true
		}
		list = append([]Node{s}, ss...)
		if pred != nil && id.InOpen(pred.ID, self.ID, s.ID) {
			list = append([]Node{*pred}, list...)
		}
		break
	}
	if list == nil {
		// Every successor failed: fall back on whatever else we know.
		r.mu.Lock()
		for _, u := range r.vnodes {
			list = u.known(list)
		}
		list = slices.DeleteFunc(list, func(n Node) bool { return n.Peer != r.cfg.Self.Peer && r.isSuspect(n.Peer) })
		r.mu.Unlock()
	}
	list = r.admitAll(ctx, sortFrom(self.ID, list))
	var ev []Event
	r.mu.Lock()
	list = r.trim(sortFrom(self.ID, append(list, r.localNodes()...)))
	if r.local(self.ID) != v || r.left {
		r.mu.Unlock()
		return Contact{}, false
	}
	v.setSuccs(list, &ev)
	succ := v.succs[0]
	r.mu.Unlock()
	r.events.publish(ev)
	if succ.ID != self.ID {
		_, _ = r.call(ctx, succ.Contact, &Message{Op: OpNotify, To: succ.ID, From: &self})
	}
	return Contact{}, false
}

// moveTwins moves local virtual servers that another node at this IP runs
// too to free indexes, and joins them there through via.
func (r *Ring) moveTwins(ctx context.Context, via Contact, twins []id.ID) {
	if !r.moving.TryLock() {
		return // a join or move is under way: look again next round
	}
	defer r.moving.Unlock()
	r.mu.Lock()
	joined := r.joined
	r.mu.Unlock()
	if !joined {
		return
	}
	if err := r.replaceIndexes(ctx, via, twins); err != nil {
		r.log.Warn("ring: cannot move twin virtual servers", "err", err)
		return
	}
	if _, err := r.joinVnodes(ctx, via); err != nil {
		r.log.Warn("ring: cannot join moved virtual servers", "err", err)
	}
}

// checkPredecessors pings each remote predecessor once; a failure clears
// it (through strikes and markDead).
func (r *Ring) checkPredecessors(ctx context.Context) {
	r.mu.Lock()
	seen := map[id.ID]bool{}
	var preds []Node
	for _, v := range r.vnodes {
		if p := v.pred; p != nil && p.Peer != r.cfg.Self.Peer && !seen[p.ID] {
			seen[p.ID] = true
			preds = append(preds, *p)
		}
	}
	r.mu.Unlock()
	// Each predecessor is pinged as a virtual server, not only as a peer:
	// a peer that answers may no longer run it (it came back with other
	// indexes, or moved it and the leave was lost). Its "no such virtual
	// server" makes call forget it, and the true predecessor's next
	// notify is taken; kept, the ghost would refuse that notify forever.
	for _, p := range preds {
		_, _ = r.callRetry(ctx, p.Contact, &Message{Op: OpPing, To: p.ID})
	}
}

// findPredecessor helps a vnode that has no predecessor: it looks its
// own id up through its successor, and the node that answers "the key is
// between me and my successor" is a predecessor that does not know us
// (its successor pointer jumps over us, as after a partition that took
// all its successors). It is told to adopt us at once, instead of
// walking back one node per round.
func (r *Ring) findPredecessor(ctx context.Context, v *vnode) {
	r.mu.Lock()
	self, succ, pred := v.self, v.succs[0], v.pred
	r.mu.Unlock()
	if pred != nil || succ.Peer == r.cfg.Self.Peer {
		return
	}
	var tr Trace
	if _, err := r.route(ctx, self.ID, &succ.Contact, &tr); err != nil || tr.doneBy == nil {
		return
	}
	p := *tr.doneBy
	if p.Peer == r.cfg.Self.Peer || p.ID == self.ID {
		return
	}
	_, _ = r.call(ctx, p.Contact, &Message{Op: OpSuggest, To: p.ID, From: &self})
}

// fixFinger looks up the next stale finger of v and fills it and every
// following finger the same node covers.
func (r *Ring) fixFinger(ctx context.Context, v *vnode) bool {
	r.mu.Lock()
	i := v.nextFinger
	start := v.self.ID.AddPow2(i)
	r.mu.Unlock()
	var tr Trace
	owner, err := r.route(ctx, start, nil, &tr)
	if err == nil {
		err = r.Admit(ctx, owner)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := i + 1
	if err == nil {
		next = v.setFinger(i, owner)
	}
	wrapped := next >= id.Bits
	if wrapped {
		next = 0
	}
	v.nextFinger = next
	return wrapped
}

// RefreshFingers rebuilds every local vnode's whole finger table now (one
// lookup per distinct finger) instead of one batch per round. Useful right
// after Join and in simulations.
func (r *Ring) RefreshFingers(ctx context.Context) {
	r.mu.Lock()
	vs := slices.Clone(r.vnodes)
	r.mu.Unlock()
	for _, v := range vs {
		r.mu.Lock()
		v.nextFinger = 0
		r.mu.Unlock()
		for range id.Bits {
			if ctx.Err() != nil || r.fixFinger(ctx, v) {
				break
			}
		}
	}
}

// protect hands the current neighbour set to the transport, if it can
// shield those connections from trimming.
func (r *Ring) protect() {
	p, ok := r.tr.(NeighborProtector)
	if !ok {
		return
	}
	r.mu.Lock()
	set := map[string]bool{}
	for _, v := range r.vnodes {
		if v.pred != nil {
			set[v.pred.Peer] = true
		}
		for _, s := range v.succs {
			set[s.Peer] = true
		}
	}
	r.mu.Unlock()
	delete(set, r.cfg.Self.Peer)
	peers := make([]string, 0, len(set))
	for k := range set {
		peers = append(peers, k)
	}
	slices.Sort(peers)
	p.ProtectNeighbors(peers)
}
