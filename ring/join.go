package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Join makes the local virtual servers members of the ring that via
// belongs to. For each vnode it looks up its successor through via and
// takes that node's successor list and predecessor (all verified first);
// then it installs the new state for every vnode at once and notifies the
// successors. Stabilization completes the join. Joining through this node
// itself is a no-op. With Config.ChooseIndexes, the first Join first
// picks the node's virtual-server indexes (see PickIndexes); two nodes at
// one IP that join at the same moment may pick the same index, and the
// one whose notify the successor did not accept moves that vnode to
// another free index (replaceIndexes), so that no id is run by two nodes.
func (r *Ring) Join(ctx context.Context, via Contact) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if via.Peer == r.cfg.Self.Peer {
		return nil
	}
	r.moving.Lock()
	defer r.moving.Unlock()
	r.mu.Lock()
	choose := r.cfg.ChooseIndexes && !r.joined
	r.mu.Unlock()
	if choose {
		if err := r.chooseIndexes(ctx, via); err != nil {
			return fmt.Errorf("ring join via %s: %w", via, err)
		}
	}
	for attempt, retries := 0, 0; ; attempt++ {
		lost, err := r.joinVnodes(ctx, via)
		var re *RemoteError
		if errors.As(err, &re) && re.Code == ErrCodeNoVnode && retries < maxJoinRetries {
			// A virtual server on the way moved or left while we looked
			// (another node's twin or rebalancing move): look again.
			retries++
			attempt--
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(retries) * r.cfg.StabilizeInterval):
			}
			continue
		}
		if err != nil {
			return err
		}
		if len(lost) == 0 {
			return nil
		}
		if !choose || attempt == maxTwinMoves {
			r.log.Warn("ring: another node at this IP runs the same virtual server id", "vnodes", len(lost))
			return nil
		}
		if err := r.replaceIndexes(ctx, via, lost); err != nil {
			if errors.As(err, &re) && re.Code == ErrCodeNoVnode && retries < maxJoinRetries {
				retries++
				continue
			}
			return fmt.Errorf("ring join via %s: %w", via, err)
		}
	}
}

// maxJoinRetries bounds how often Join looks again after a virtual server
// on its way moved away.
const maxJoinRetries = 5

// maxTwinMoves bounds how often one Join moves vnodes whose index another
// node at the IP took at the same moment.
const maxTwinMoves = 3

// joinVnodes joins the local vnodes that are not members yet and returns
// the ids of those whose successor accepted, as its predecessor, another
// peer with the same id: a twin at this IP (see Join). Such a vnode does
// not announce itself to its predecessor.
func (r *Ring) joinVnodes(ctx context.Context, via Contact) ([]id.ID, error) {
	type plan struct {
		self  Node
		succs []Node
		pred  *Node
		owner Node
	}
	var plans []plan
	for _, self := range r.Vnodes() {
		owner, _, err := r.lookup(ctx, self.ID, &via)
		if err != nil {
			return nil, fmt.Errorf("ring join via %s: %w", via, err)
		}
		if owner == self {
			// Already a member. One placed by a move that the ring learnt
			// of before this join still reports the range it took.
			r.mu.Lock()
			if v := r.local(self.ID); v != nil && v.placed != nil {
				if r.cfg.Took != nil {
					r.cfg.Took(self, *v.placed)
				}
				v.placed = nil
			}
			r.mu.Unlock()
			continue
		}
		if err := r.Admit(ctx, owner); err != nil {
			return nil, fmt.Errorf("ring join via %s: %w", via, err)
		}
		pred, succs, err := r.neighbors(ctx, owner)
		if err != nil {
			return nil, fmt.Errorf("ring join via %s: %w", via, err)
		}
		p := plan{self: self, owner: owner, succs: r.admitAll(ctx, sortFrom(self.ID, append([]Node{owner}, succs...)))}
		// The owner's predecessor is ours only if we fall between them.
		if pred != nil && id.InOpen(self.ID, pred.ID, owner.ID) && r.Admit(ctx, *pred) == nil {
			c := *pred
			p.pred = &c
		}
		plans = append(plans, p)
	}
	var ev []Event
	r.mu.Lock()
	r.joined = true
	local := r.localNodes()
	for _, p := range plans {
		v := r.local(p.self.ID)
		v.setSuccs(r.trim(sortFrom(p.self.ID, append(p.succs, local...))), &ev)
		var pred *Node
		if p.pred != nil {
			// A local vnode between the remote predecessor and us is closer.
			pred = p.pred
			for _, u := range local {
				if id.InOpen(u.ID, pred.ID, p.self.ID) {
					c := u
					pred = &c
				}
			}
		}
		v.setPred(pred, &ev)
		if r.cfg.Took != nil {
			// The range's holder until now: the owner the lookup of its id
			// found (a virtual server of this node's own included), and the
			// one a move found before it placed the vnode.
			r.cfg.Took(p.self, p.owner)
			if v.placed != nil && *v.placed != p.owner {
				r.cfg.Took(p.self, *v.placed)
			}
		}
		v.placed = nil
	}
	r.mu.Unlock()
	r.events.publish(ev)
	var lost []id.ID
	for _, p := range plans {
		r.mu.Lock()
		succ := r.local(p.self.ID).succs[0]
		r.mu.Unlock()
		self := p.self
		if succ.ID != self.ID {
			_, _ = r.call(ctx, succ.Contact, &Message{Op: OpNotify, To: succ.ID, From: &self})
			// The successor keeps the first of two notifiers with one id:
			// if that is another peer, this vnode is the twin that moves.
			if sp, _, err := r.neighbors(ctx, succ); err == nil && sp != nil && sp.ID == self.ID && sp.Peer != self.Peer {
				lost = append(lost, self.ID)
				continue
			}
		}
		// Tell the predecessor at once, so lookups through it see us
		// before its next stabilization.
		if p.pred != nil && p.pred.Peer != r.cfg.Self.Peer {
			_, _ = r.call(ctx, p.pred.Contact, &Message{Op: OpSuggest, To: p.pred.ID, From: &self})
		}
	}
	return lost, nil
}

// Leave departs gracefully: each local vnode tells its nearest remote
// predecessor about its successors and its nearest remote successor about
// its predecessor, so they link to each other at once. After Leave the
// ring answers no requests; call Close next.
func (r *Ring) Leave(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	type handover struct {
		self  Node
		pred  *Node
		heirs []Node
	}
	var hs []handover
	r.mu.Lock()
	r.left = true
	isLocal := func(n Node) bool { return n.Peer == r.cfg.Self.Peer }
	var allSuccs []Node
	for _, v := range r.vnodes {
		allSuccs = append(allSuccs, v.succs...)
	}
	allSuccs = slices.DeleteFunc(allSuccs, isLocal)
	for _, v := range r.vnodes {
		h := handover{self: v.self}
		p := v.pred
		for range len(r.vnodes) {
			if p == nil || !isLocal(*p) {
				break
			}
			if u := r.local(p.ID); u != nil {
				p = u.pred
			} else {
				p = nil
			}
		}
		if p != nil && !isLocal(*p) {
			c := *p
			h.pred = &c
		}
		h.heirs = r.trim(sortFrom(v.self.ID, slices.Clone(allSuccs)))
		hs = append(hs, h)
	}
	r.mu.Unlock()
	var firstErr error
	for _, h := range hs {
		self := h.self
		if h.pred != nil {
			_, err := r.call(ctx, h.pred.Contact, &Message{Op: OpLeave, To: h.pred.ID, From: &self, Nodes: h.heirs})
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
		if len(h.heirs) > 0 {
			s := h.heirs[0]
			_, err := r.call(ctx, s.Contact, &Message{Op: OpLeave, To: s.ID, From: &self, Pred: h.pred})
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return fmt.Errorf("ring leave: %w", firstErr)
	}
	return nil
}

// probeGrave pings one formerly dead peer per round (at its last address,
// then at the address the Resolver gives, if any). If it answers, it is
// no longer suspected, and each local vnode looks itself up through it:
// a successor closer than the current one (a node of a ring we were
// partitioned from) is adopted, and stabilization merges the two rings.
func (r *Ring) probeGrave(ctx context.Context) {
	r.mu.Lock()
	now := r.clock.Now()
	r.grave = slices.DeleteFunc(r.grave, func(g graveEntry) bool { return now.Sub(g.at) > graveTTL })
	if len(r.grave) == 0 {
		r.mu.Unlock()
		return
	}
	r.graveAt %= len(r.grave)
	g := r.grave[r.graveAt].n
	r.graveAt++
	r.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	_, err := r.tr.Call(cctx, g.Contact, &Message{Op: OpPing})
	cancel()
	at := g.Contact
	if err != nil && r.cfg.Resolver != nil {
		// Perhaps it moved: ask the resolver where the peer is now.
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		defer cancel()
		c, rerr := r.cfg.Resolver.Resolve(cctx, g.Peer)
		if rerr == nil && c.Peer == g.Peer && c.Addr != g.Addr && CheckAddr(c.Addr) == nil {
			if _, err = r.tr.Call(cctx, c, &Message{Op: OpPing}); err == nil {
				at = c
				r.log.Info("ring: peer moved", "peer", c.Peer, "from", g.Addr, "to", c.Addr)
			}
		}
	}
	if err != nil {
		return
	}
	r.mu.Lock()
	delete(r.suspect, g.Peer)
	r.grave = slices.DeleteFunc(r.grave, func(e graveEntry) bool { return e.n.Peer == g.Peer })
	r.mu.Unlock()
	r.mergeVia(ctx, at)
}

// mergeVia looks each local vnode up through c and adopts a closer
// successor found there.
func (r *Ring) mergeVia(ctx context.Context, c Contact) {
	for _, self := range r.Vnodes() {
		var tr Trace
		owner, err := r.route(ctx, self.ID, &c, &tr)
		if err != nil || owner.ID == self.ID || r.Admit(ctx, owner) != nil {
			continue
		}
		var ev []Event
		r.mu.Lock()
		v := r.local(self.ID)
		if v != nil && !r.left && (v.alone() || id.InOpen(owner.ID, self.ID, v.succs[0].ID)) {
			v.setSuccs(r.trim(sortFrom(self.ID, append(slices.Clone(v.succs), owner))), &ev)
			r.n.merges.Add(1)
		}
		r.mu.Unlock()
		r.events.publish(ev)
	}
}
