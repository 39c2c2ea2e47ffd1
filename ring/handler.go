package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// RemoteError is a refusal reported by a live remote node.
type RemoteError struct{ Code string }

func (e *RemoteError) Error() string { return "ring: remote refused: " + e.Code }

// call sends m to the real node c, short-circuiting calls to this node.
// A transport failure marks c's peer as suspected dead. It must be called
// without r.mu held.
func (r *Ring) call(ctx context.Context, c Contact, m *Message) (*Message, error) {
	if c.Peer == r.cfg.Self.Peer {
		return r.handle(ctx, c.Peer, m), nil
	}
	r.n.calls.Add(1)
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	reply, err := r.tr.Call(cctx, c, m)
	if err != nil {
		r.n.callErrors.Add(1)
		if ctx.Err() == nil {
			r.strike(c.Peer)
		}
		return nil, fmt.Errorf("ring %s to %s: %w", m.Op, c, err)
	}
	r.mu.Lock()
	delete(r.strikes, c.Peer)
	r.heardFrom(c.Peer)
	r.mu.Unlock()
	if reply.Err != "" {
		if reply.Err == ErrCodeNoVnode {
			r.forgetID(m.To, c.Peer)
		}
		return nil, fmt.Errorf("ring %s to %s: %w", m.Op, c, &RemoteError{Code: reply.Err})
	}
	return reply, nil
}

// callRetry is call with one retry after a transport failure, for
// maintenance calls whose failure removes a node from the tables: a single
// lost message must not evict a live neighbour.
func (r *Ring) callRetry(ctx context.Context, c Contact, m *Message) (*Message, error) {
	reply, err := r.call(ctx, c, m)
	var re *RemoteError
	if err != nil && ctx.Err() == nil && !errors.As(err, &re) {
		reply, err = r.call(ctx, c, m)
	}
	return reply, err
}

// strike records a failed call to peer; maxStrikes consecutive failures
// mark it dead.
func (r *Ring) strike(peer string) {
	r.mu.Lock()
	r.strikes[peer]++
	dead := r.strikes[peer] >= maxStrikes
	if dead {
		delete(r.strikes, peer)
	}
	r.mu.Unlock()
	if dead {
		r.markDead(peer)
	}
}

// handle serves a request from the authenticated peer `from`.
func (r *Ring) handle(ctx context.Context, from string, m *Message) *Message {
	if r.closed.Load() {
		return &Message{Err: ErrCodeNoVnode}
	}
	if from != r.cfg.Self.Peer {
		r.mu.Lock()
		r.heardFrom(from) // it is up: lookups may name it unpinged (known.go)
		r.mu.Unlock()
	}
	switch m.Op {
	case OpPing:
		// A ping To a virtual server asks whether this node still runs
		// it (checkPredecessors); without To, whether the node is up.
		r.mu.Lock()
		gone := r.left || (!m.To.IsZero() && r.local(m.To) == nil)
		r.mu.Unlock()
		if gone {
			return &Message{Err: ErrCodeNoVnode}
		}
		return &Message{Op: OpPing}
	case OpStep:
		return r.stepLocal(m.Key)
	case OpNeighbors:
		r.mu.Lock()
		defer r.mu.Unlock()
		v := r.local(m.To)
		if v == nil || r.left {
			return &Message{Err: ErrCodeNoVnode}
		}
		reply := &Message{Op: OpNeighbors, From: &v.self, Nodes: slices.Clone(v.succs)}
		if v.pred != nil {
			p := *v.pred
			reply.Pred = &p
		}
		return reply
	case OpNotify:
		return r.handleNotify(ctx, from, m)
	case OpLeave:
		return r.handleLeave(ctx, from, m)
	case OpSuggest:
		return r.handleSuggest(ctx, from, m)
	case OpShare:
		return r.handleShare()
	}
	return &Message{Err: ErrCodeBadOp}
}

// checkSender verifies that the claimed sender vnode belongs to the
// authenticated peer and is admissible.
func (r *Ring) checkSender(ctx context.Context, from string, m *Message) bool {
	if m.From == nil {
		return false
	}
	if m.From.Peer != from {
		r.refuse(*m.From, fmt.Errorf("%w: sender claims %s, authenticated as %s", ErrBadPeer, m.From.Peer, from))
		return false
	}
	return r.Admit(ctx, *m.From) == nil
}

func (r *Ring) handleNotify(ctx context.Context, from string, m *Message) *Message {
	if !r.checkSender(ctx, from, m) {
		return &Message{Err: ErrCodeRefused}
	}
	r.n.notifies.Add(1)
	n := *m.From
	var ev []Event
	r.mu.Lock()
	v := r.local(m.To)
	if v == nil || r.left {
		r.mu.Unlock()
		return &Message{Err: ErrCodeNoVnode}
	}
	delete(r.suspect, n.Peer)
	if v.pred == nil || id.InOpen(n.ID, v.pred.ID, v.self.ID) || r.isSuspect(v.pred.Peer) {
		v.setPred(&n, &ev)
	}
	if v.alone() {
		v.setSuccs([]Node{n}, &ev)
	}
	r.mu.Unlock()
	r.events.publish(ev)
	return &Message{Op: OpNotify}
}

// handleSuggest adopts a verified joining vnode as successor if it lies
// between the vnode and its current successor.
func (r *Ring) handleSuggest(ctx context.Context, from string, m *Message) *Message {
	if !r.checkSender(ctx, from, m) {
		return &Message{Err: ErrCodeRefused}
	}
	n := *m.From
	var ev []Event
	r.mu.Lock()
	v := r.local(m.To)
	if v == nil || r.left {
		r.mu.Unlock()
		return &Message{Err: ErrCodeNoVnode}
	}
	if v.alone() || id.InOpen(n.ID, v.self.ID, v.succs[0].ID) {
		v.setSuccs(r.trim(sortFrom(v.self.ID, append(slices.Clone(v.succs), n))), &ev)
	}
	r.mu.Unlock()
	r.events.publish(ev)
	return &Message{Op: OpSuggest}
}

func (r *Ring) handleLeave(ctx context.Context, from string, m *Message) *Message {
	if !r.checkSender(ctx, from, m) {
		return &Message{Err: ErrCodeRefused}
	}
	r.n.leaves.Add(1)
	gone := *m.From
	var newPred *Node
	if m.Pred != nil && m.Pred.ID != gone.ID && r.Admit(ctx, *m.Pred) == nil {
		newPred = m.Pred
	}
	heirs := r.admitAll(ctx, slices.DeleteFunc(slices.Clone(m.Nodes), func(n Node) bool { return n.ID == gone.ID }))
	var ev []Event
	r.mu.Lock()
	r.leaving[gone.Peer] = time.Now()
	v := r.local(m.To)
	if v == nil {
		r.mu.Unlock()
		return &Message{Err: ErrCodeNoVnode}
	}
	if v.pred != nil && v.pred.ID == gone.ID {
		v.setPred(newPred, &ev)
	}
	if slices.ContainsFunc(v.succs, func(n Node) bool { return n.ID == gone.ID }) {
		rest := slices.DeleteFunc(slices.Clone(v.succs), func(n Node) bool { return n.ID == gone.ID })
		v.setSuccs(r.trim(sortFrom(v.self.ID, append(rest, heirs...))), &ev)
	}
	v.forget(func(n Node) bool { return n.ID == gone.ID }, &ev)
	r.mu.Unlock()
	r.events.publish(ev)
	return &Message{Op: OpLeave}
}

// markDead suspects peer for a while, drops it from every table and
// remembers it for merge probing.
func (r *Ring) markDead(peer string) {
	if peer == r.cfg.Self.Peer {
		return
	}
	var ev []Event
	r.mu.Lock()
	r.suspect[peer] = r.clock.Now().Add(r.suspectTTL())
	var victim *Node
	for _, v := range r.vnodes {
		v.forget(func(n Node) bool {
			if n.Peer == peer && victim == nil {
				c := n
				victim = &c
			}
			return n.Peer == peer
		}, &ev)
	}
	if victim != nil {
		r.bury(*victim)
	}
	r.mu.Unlock()
	r.events.publish(ev)
}

// bury remembers n's real node for merge probing. Caller holds mu.
func (r *Ring) bury(n Node) {
	e := graveEntry{n: n, at: r.clock.Now()}
	for i, g := range r.grave {
		if g.n.Peer == n.Peer {
			r.grave[i] = e
			return
		}
	}
	if len(r.grave) >= graveCap {
		r.grave = r.grave[1:]
	}
	r.grave = append(r.grave, e)
}

// forgetID drops the virtual server x of peer (one it no longer runs)
// from every table; a twin with the same id on another peer stays.
func (r *Ring) forgetID(x id.ID, peer string) {
	var ev []Event
	r.mu.Lock()
	for _, v := range r.vnodes {
		v.forget(func(n Node) bool { return n.ID == x && n.Peer == peer && n.Peer != r.cfg.Self.Peer }, &ev)
	}
	r.mu.Unlock()
	r.events.publish(ev)
}
