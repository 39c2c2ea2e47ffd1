package ring

import (
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Answering lookups from what this node already knows.
//
// A real node's virtual servers know stretches of the circle without a
// gap: each vnode's predecessor is followed by the vnode, the vnode by
// its first successor, and each successor-list entry by the next. In a
// small ring these stretches cover the whole circle (in a ring of 4
// nodes of 4 virtual servers with lists of 8, every node knows every
// virtual server), so the owner of a key, and the nodes after it, are
// read from the tables instead of asking a node a lookup step (a stream)
// and pinging the owner (another). Lookup and Successors use the local
// answer when the stretch covering the key and its k holders is known
// and the owner is this node or was heard from within two maintenance
// rounds; otherwise they run the iterative lookup as before. A node that
// a local answer named and that says it does not own the key is reported
// with Disowned, and lookups run iteratively for three maintenance rounds
// (long enough for successor lists to learn of a node that just joined).

// heardWithin is how recently a peer must have answered a call for a
// lookup to return it as an owner without pinging it.
func (r *Ring) heardWithin() time.Duration { return 2 * r.cfg.StabilizeInterval }

// maxHeard bounds the peers whose last answer is remembered.
const maxHeard = 1024

// heardFrom records that peer answered a call of this node's or sent it
// one. Caller holds mu.
func (r *Ring) heardFrom(peer string) {
	now := r.clock.Now()
	if len(r.heard) >= maxHeard {
		for p, at := range r.heard {
			if now.Sub(at) > r.heardWithin() {
				delete(r.heard, p)
			}
		}
		if len(r.heard) >= maxHeard {
			clear(r.heard)
		}
	}
	r.heard[peer] = now
}

// heardRecently reports whether peer answered or sent a call within
// heardWithin, so that it need not be pinged before a lookup names it.
// Caller holds mu.
func (r *Ring) heardRecently(peer string) bool {
	at, ok := r.heard[peer]
	return ok && r.clock.Now().Sub(at) <= r.heardWithin() && !r.isSuspect(peer)
}

// Disowned tells the ring that the node behind c, which a lookup of key
// returned, said it does not own key: for the next three maintenance rounds lookups ask
// the ring (iteratively, from the node closest to each key) instead of
// answering from this node's successor lists, which may not know yet of
// a node that joined. Callers that forget a cached owner on such an
// answer call it before looking the key up again.
func (r *Ring) Disowned(key id.ID, c Contact) {
	r.mu.Lock()
	r.distrustUntil = r.clock.Now().Add(3 * r.cfg.StabilizeInterval)
	r.mu.Unlock()
	r.n.disowned.Add(1)
	r.log.Debug("ring: owner disowned key; lookups go iterative", "key", key.Short(), "node", c.Addr)
}

// localHolders returns key's owner followed by up to k-1 nodes after it on
// distinct real nodes (Successors' answer), read from the local vnodes'
// predecessors and successor lists, and whether they cover it: the
// stretch from the owner on must be known without a gap until k holders
// are found or the circle is closed, no node in it suspected or leaving,
// and the owner this node or heard from recently. Caller holds mu.
func (r *Ring) localHolders(key id.ID, k int) ([]Node, bool) {
	now := r.clock.Now()
	if r.left || now.Before(r.distrustUntil) {
		return nil, false
	}
	// The edges a -> b: b is known to follow a directly. Where two
	// tables disagree about a's follower, the closer one clockwise is
	// newer (a node that joined in between): next picks it.
	edges := r.edgeBuf[:0]
	for _, v := range r.vnodes {
		if v.pred != nil && v.pred.ID != v.self.ID {
			edges = append(edges, edge{v.pred.ID, v.self})
		}
		if v.alone() {
			continue
		}
		prev := v.self.ID
		for _, s := range v.succs {
			if s.ID != prev {
				edges = append(edges, edge{prev, s})
			}
			prev = s.ID
		}
	}
	r.edgeBuf = edges
	next := func(a id.ID) (Node, bool) {
		var best *Node
		for i := range edges {
			if e := &edges[i]; e.from == a && (best == nil || dist(a, e.to.ID).Less(dist(a, best.ID))) {
				best = &e.to
			}
		}
		if best == nil {
			return Node{}, false
		}
		return *best, true
	}
	// The owner is the node ending the known step (a, b] holding key,
	// the closest to key clockwise when several do.
	var owner *Node
	for i := range edges {
		e := &edges[i]
		if id.InHalfOpen(key, e.from, e.to.ID) && (owner == nil || dist(key, e.to.ID).Less(dist(key, owner.ID))) {
			o := e.to
			owner = &o
		}
	}
	if owner == nil || !r.usable(*owner, now) {
		return nil, false
	}
	if owner.Peer != r.cfg.Self.Peer && !r.heardRecently(owner.Peer) {
		return nil, false
	}
	out := []Node{*owner}
	seen := map[string]bool{owner.Peer: true}
	cur := *owner
	for range len(edges) {
		if len(out) >= k {
			return out, true
		}
		n, ok := next(cur.ID)
		if !ok || !r.usable(n, now) {
			return nil, false
		}
		if n.ID == owner.ID || id.InOpen(owner.ID, cur.ID, n.ID) {
			return out, true // around the circle: fewer real nodes than k
		}
		if !seen[n.Peer] {
			seen[n.Peer] = true
			out = append(out, n)
		}
		cur = n
	}
	return out, len(out) >= k
}

// edge says that node to directly follows id from on the circle, by one
// of the local tables.
type edge struct {
	from id.ID
	to   Node
}

// usable reports whether a local answer may name n: not suspected dead
// and not announced leaving within a suspicion period. Caller holds mu.
func (r *Ring) usable(n Node, now time.Time) bool {
	if n.Peer == r.cfg.Self.Peer {
		return true
	}
	if r.isSuspect(n.Peer) {
		return false
	}
	at, ok := r.leaving[n.Peer]
	return !ok || time.Since(at) > r.suspectTTL() // set by the handler in real time
}

// LocalOwner returns key's owner when this node's own tables cover it
// and the owner is this node or answered a call within two maintenance
// rounds (what Lookup answers without a message), and false otherwise:
// the caller then routes as it would without it.
func (r *Ring) LocalOwner(key id.ID) (Node, bool) {
	if r.closed.Load() {
		return Node{}, false
	}
	r.mu.Lock()
	hs, ok := r.localHolders(key, 1)
	r.mu.Unlock()
	if !ok {
		return Node{}, false
	}
	return hs[0], true
}
