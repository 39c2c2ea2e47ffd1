package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/herod-archive/herod/internal/id"
)

// maxSteps bounds the remote steps of one lookup.
const maxSteps = 64

// Trace describes how one lookup went.
type Trace struct {
	// Hops is the number of remote nodes that answered a lookup step.
	Hops int `json:"hops"`
	// Timeouts is the number of step or ping calls that failed (dead or
	// unreachable nodes routed around).
	Timeouts int `json:"timeouts"`
	// Pings is the number of liveness checks of the owner candidate.
	Pings int `json:"pings"`
	// doneBy is the vnode that reported the key between itself and its
	// successor, when the lookup ended that way.
	doneBy *Node
}

// stepLocal answers a lookup step for key from the union of all local
// vnodes' tables: Done with the owner candidates when key falls in a
// local vnode's range or between a local vnode and its successor,
// otherwise the preceding-node list.
func (r *Ring) stepLocal(key id.ID) *Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left {
		return &Message{Err: ErrCodeNoVnode}
	}
	if r.isolated() {
		// The local vnodes are the whole ring: the owner is the first one
		// at or after the key.
		best := r.vnodes[0].self
		for _, v := range r.vnodes[1:] {
			if dist(key, v.self.ID).Less(dist(key, best.ID)) {
				best = v.self
			}
		}
		return &Message{Op: OpStep, Done: true, From: &best, Owners: []Node{best}}
	}
	for _, v := range r.vnodes {
		if v.pred != nil && id.InHalfOpen(key, v.pred.ID, v.self.ID) {
			self := v.self
			return &Message{Op: OpStep, Done: true, From: &self, Owners: []Node{self}}
		}
	}
	// The key lies between a vnode and its first successor: done. Further
	// along a successor list the answer may be stale (a node may have
	// joined that only the entry's predecessor knows yet), so the entries
	// after the key are returned only as a fallback for when every node
	// closer to the key is dead.
	var fallback []Node
	for _, v := range r.vnodes {
		if v.alone() {
			continue // lost every successor; knows nothing about the key
		}
		if id.InHalfOpen(key, v.self.ID, v.succs[0].ID) {
			self := v.self
			return &Message{Op: OpStep, Done: true, From: &self, Owners: slices.Clone(v.succs)}
		}
		for i := 1; i < len(v.succs); i++ {
			if id.InHalfOpen(key, v.succs[i-1].ID, v.succs[i].ID) {
				fallback = append(fallback, v.succs[i:]...)
				break
			}
		}
	}
	known := make([]Node, 0, len(r.vnodes)*(2+r.cfg.SuccessorListLen+16))
	for _, v := range r.vnodes {
		known = append(known, v.self)
		known = v.known(known)
	}
	skip := func(n Node) bool { return n.Peer != r.cfg.Self.Peer && r.isSuspect(n.Peer) }
	known = topToward(key, known, maxPreceding, skip)
	return &Message{Op: OpStep, From: r.closestPreceding(key, r.localNodes()), Nodes: known, Owners: fallback}
}

// isolated reports whether this node knows no other real node: then its
// vnodes form the whole ring. Caller holds mu.
func (r *Ring) isolated() bool {
	for _, v := range r.vnodes {
		if v.pred != nil && v.pred.Peer != r.cfg.Self.Peer {
			return false
		}
		for _, s := range v.succs {
			if s.Peer != r.cfg.Self.Peer {
				return false
			}
		}
		for _, f := range v.fingers {
			if f != nil && f.Peer != r.cfg.Self.Peer {
				return false
			}
		}
	}
	return true
}

// Lookup returns the owner of key, successor(key), by the thesis's
// iterative algorithm: it asks successively closer nodes for their
// preceding-node lists, routing around nodes that do not answer, until a
// node reports key between itself and its successor; the first live
// successor is the owner.
//
// When this node's own tables cover the key (known.go) and the owner
// answered a call within two maintenance rounds, the owner is read from
// them without a message.
func (r *Ring) Lookup(ctx context.Context, key id.ID) (Node, error) {
	if r.closed.Load() {
		return Node{}, ErrClosed
	}
	r.mu.Lock()
	hs, ok := r.localHolders(key, 1)
	r.mu.Unlock()
	if ok {
		r.n.lookups.Add(1)
		r.n.localLookups.Add(1)
		return hs[0], nil
	}
	n, _, err := r.LookupTrace(ctx, key)
	return n, err
}

// LookupTrace is Lookup that also reports the route's cost. It always
// routes (the simulator measures routes with it); only the owner's ping
// is skipped when it answered a call within two maintenance rounds.
func (r *Ring) LookupTrace(ctx context.Context, key id.ID) (Node, Trace, error) {
	return r.lookup(ctx, key, nil)
}

// lookup runs an iterative lookup, starting at via when given (used by
// Join) and at the local tables otherwise.
func (r *Ring) lookup(ctx context.Context, key id.ID, via *Contact) (Node, Trace, error) {
	var tr Trace
	if r.closed.Load() {
		return Node{}, tr, ErrClosed
	}
	r.n.lookups.Add(1)
	owner, err := r.route(ctx, key, via, &tr)
	if err != nil && ctx.Err() == nil {
		owner, err = r.route(ctx, key, via, &tr) // once more, around what failed
	}
	r.n.hops.Add(uint64(tr.Hops))
	r.n.timeouts.Add(uint64(tr.Timeouts))
	if err != nil {
		r.n.lookupFailures.Add(1)
		return Node{}, tr, fmt.Errorf("ring lookup %s: %w", key.Short(), err)
	}
	return owner, tr, nil
}

func (r *Ring) route(ctx context.Context, key id.ID, via *Contact, tr *Trace) (Node, error) {
	visited := map[string]bool{r.cfg.Self.Peer: true}
	var pool []Node     // candidates preceding key, closest first
	var fallback []Node // owner candidates from successor lists, used last
	var best *id.ID     // distance to key of the closest responder so far
	var resp *Message
	responder := r.cfg.Self.Peer
	if via == nil {
		resp = r.stepLocal(key)
	} else {
		var err error
		resp, err = r.call(ctx, *via, &Message{Op: OpStep, Key: key})
		if err != nil {
			tr.Timeouts++
			return Node{}, err
		}
		tr.Hops++
		responder = via.Peer
		visited[via.Peer] = true
	}
	for step := 0; ; step++ {
		if ctx.Err() != nil {
			return Node{}, ctx.Err()
		}
		if resp != nil && resp.Done {
			if o, ok := r.resolveOwner(ctx, resp.Owners, responder, tr); ok {
				tr.doneBy = resp.From
				return o, nil
			}
		} else if resp != nil && resp.From != nil {
			fallback = append(fallback, resp.Owners...)
			bound := dist(resp.From.ID, key)
			if best == nil || bound.Cmp(*best) < 0 {
				best = &bound
			}
			added := false
			for _, n := range resp.Nodes {
				if visited[n.Peer] || dist(n.ID, key).Cmp(bound) >= 0 || CheckID(n, r.cfg.MaxVirtualServers) != nil {
					continue
				}
				pool = append(pool, n)
				added = true
			}
			if added {
				pool = topToward(key, pool, len(pool), nil)
			}
		}
		if step >= maxSteps {
			return Node{}, fmt.Errorf("%w: %d steps", ErrLookupFailed, step)
		}
		// Pick the closest preceding candidate not yet asked and not dead,
		// as long as it is closer to the key than the best responder.
		var next *Node
		for len(pool) > 0 {
			n := pool[0]
			pool = pool[1:]
			if best != nil && dist(n.ID, key).Cmp(*best) >= 0 {
				pool = nil
				break
			}
			r.mu.Lock()
			sus := r.isSuspect(n.Peer)
			r.mu.Unlock()
			if !visited[n.Peer] && !sus {
				next = &n
				break
			}
		}
		if next == nil {
			// Every node closer to the key is dead: the owner is the first
			// live node after the key that successor lists name.
			slices.SortStableFunc(fallback, func(a, b Node) int { return dist(key, a.ID).Cmp(dist(key, b.ID)) })
			if o, ok := r.resolveOwner(ctx, slices.CompactFunc(fallback, func(a, b Node) bool { return a.ID == b.ID }), "", tr); ok {
				return o, nil
			}
			return Node{}, fmt.Errorf("%w: no live node closer to the key", ErrLookupFailed)
		}
		visited[next.Peer] = true
		var err error
		resp, err = r.call(ctx, next.Contact, &Message{Op: OpStep, To: next.ID, Key: key})
		if err != nil {
			tr.Timeouts++
			resp = nil
			continue
		}
		tr.Hops++
		responder = next.Peer
	}
}

// resolveOwner returns the first owner candidate that passes Admit and is
// alive: local, the responder itself, or answering a ping.
func (r *Ring) resolveOwner(ctx context.Context, owners []Node, responder string, tr *Trace) (Node, bool) {
	for _, o := range owners {
		if r.Admit(ctx, o) != nil {
			continue
		}
		if o.Peer == r.cfg.Self.Peer || o.Peer == responder {
			return o, true
		}
		r.mu.Lock()
		sus := r.isSuspect(o.Peer)
		fresh := !sus && r.heardRecently(o.Peer)
		r.mu.Unlock()
		if sus {
			continue
		}
		if fresh {
			return o, true // answered a call within two maintenance rounds
		}
		// Skipping a live owner would return a wrong node, so a candidate
		// gets three tries before it is passed over.
		alive := false
		for try := 0; try < 3 && !alive && ctx.Err() == nil; try++ {
			tr.Pings++
			_, err := r.call(ctx, o.Contact, &Message{Op: OpPing})
			var re *RemoteError
			if err != nil && errors.As(err, &re) {
				break // alive but the vnode is gone
			}
			if err != nil {
				tr.Timeouts++
			}
			alive = err == nil
		}
		if alive {
			return o, true
		}
	}
	return Node{}, false
}

// neighbors returns n's predecessor and successor list.
func (r *Ring) neighbors(ctx context.Context, n Node) (*Node, []Node, error) {
	reply, err := r.callRetry(ctx, n.Contact, &Message{Op: OpNeighbors, To: n.ID})
	if err != nil {
		return nil, nil, err
	}
	return reply.Pred, reply.Nodes, nil
}

// Successors returns the owner of key followed by up to k-1 successors
// that run on distinct real nodes (distinct from the owner's and from each
// other), walking successor lists clockwise. It returns fewer than k when
// the ring has fewer real nodes.
func (r *Ring) Successors(ctx context.Context, key id.ID, k int) ([]Node, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	r.mu.Lock()
	hs, ok := r.localHolders(key, max(k, 1))
	r.mu.Unlock()
	if ok {
		r.n.lookups.Add(1)
		r.n.localLookups.Add(1)
		return hs, nil
	}
	owner, err := r.Lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	return r.SuccessorsFrom(ctx, owner, k)
}

// SuccessorsFrom is Successors for an owner already looked up: owner
// followed by up to k-1 successors on distinct real nodes, read from the
// successor lists of owner and the nodes after it (one call each, usually
// one in all), not by a lookup per step. It returns what it has with an
// error when a successor list cannot be read.
func (r *Ring) SuccessorsFrom(ctx context.Context, owner Node, k int) ([]Node, error) {
	out := []Node{owner}
	if k <= 1 {
		return out, nil
	}
	seen := map[string]bool{owner.Peer: true}
	cur := owner
	for walked := 0; walked < 4*k+8; walked++ {
		_, succs, err := r.neighbors(ctx, cur)
		if err != nil {
			return out, fmt.Errorf("ring successors: %w", err)
		}
		advanced := false
		for _, s := range succs {
			if s.ID == owner.ID || CheckID(s, r.cfg.MaxVirtualServers) != nil {
				return out, nil // wrapped around the ring
			}
			if id.InOpen(s.ID, cur.ID, owner.ID) || cur.ID == owner.ID {
				cur, advanced = s, true
			}
			if !seen[s.Peer] {
				seen[s.Peer] = true
				out = append(out, s)
				if len(out) == k {
					return out, nil
				}
			}
		}
		if !advanced {
			return out, nil
		}
	}
	return out, nil
}
