package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// One fetch per URL and day while the ring forms. A node that joins takes
// each of its virtual servers' ranges from the node that held it — the
// virtual server's successor at the join — and that former owner may have
// fetched some of the range's URLs earlier the same day. The day's
// URL-seen set stays with the former owner, so without help the joiner
// fetches such a URL again when another page links to it later that day.
//
// The joiner therefore claims, for the rest of its join day, every URL of
// a range it took before fetching it (claimProtocol): the former owner
// answers "taken" if it fetched or is fetching the URL today, or took the
// range from another node today and that one answers "taken" (the claim
// follows the chain of joins); otherwise it records the URL as claimed
// away and answers "yours". Both sides decide under one mutex per node
// (dayClaims), and a node marks a URL as its own just before each fetch
// (relocator.Moved), so of two nodes that believe they own a URL at once
// exactly one fetches it. A URL claimed away is dropped from the former
// owner's queue; a URL found taken is dropped from the joiner's (its
// version reaches the joiner by replication).
//
// Cost: one round trip per URL fetched in a taken range, on the join day
// only; nothing otherwise (a map insert per fetch).

const claimProtocol protocol.ID = "/herod/claim/1.0.0"

// claimTimeout bounds one claim; a former owner that does not answer in
// time leaves the URL to the joiner (fetched rather than lost).
const claimTimeout = 10 * time.Second

// maxClaimFrame bounds a claim request or reply.
const maxClaimFrame = 16 << 10

// claimRequest claims URL for day Day for the claimer's virtual server
// Vnode, which must lie between the URL's key and the answering node's
// virtual servers.
type claimRequest struct {
	URL   string    `json:"url"`
	Day   int64     `json:"day"`
	Vnode ring.Node `json:"vnode"`
	Hops  int       `json:"hops,omitempty"` // former owners asked before this one
}

// maxClaimHops bounds the chain of former owners one claim follows.
const maxClaimHops = 4

// claimReply answers a claim.
type claimReply struct {
	Taken bool   `json:"taken,omitempty"` // fetched today by the former owner (or before it)
	Err   string `json:"err,omitempty"`
}

// dayClaims is one node's record of the day's fetches and claims.
type dayClaims struct {
	mu     sync.Mutex
	day    int64
	mine   map[id.ID]bool      // keys this node fetched or is fetching today
	away   map[id.ID]string    // keys a newer owner claimed today, and its peer id
	taken  map[id.ID]bool      // keys a former owner had fetched today
	former map[id.ID]ring.Node // per local vnode id: the former owner of its range
	since  map[id.ID]int64     // per local vnode id: the day it took its range
}

// roll resets the day's sets when day is a new one; the caller holds mu.
func (c *dayClaims) roll(day int64) {
	if c.mine != nil && c.day == day {
		return
	}
	c.day = day
	c.mine = make(map[id.ID]bool)
	c.away = make(map[id.ID]string)
	c.taken = make(map[id.ID]bool)
	if c.former == nil {
		c.former = make(map[id.ID]ring.Node)
		c.since = make(map[id.ID]int64)
	}
}

// tookRanges records, after a join, each local virtual server's former
// owner: its first successor on another node.
func (n *Node) tookRanges() {
	for _, v := range n.ring.Status().Vnodes {
		n.tookFromSuccessor(v.Node.ID)
	}
}

// tookFromSuccessor records that local virtual server v took its range
// today from its first successor on another node.
func (n *Node) tookFromSuccessor(v id.ID) {
	for _, st := range n.ring.Status().Vnodes {
		if st.Node.ID != v {
			continue
		}
		for _, s := range st.Successors {
			if s.Peer != n.self.Peer {
				n.tookRange(v, s, n.claimDay())
				return
			}
		}
	}
}

// tookRange records that local virtual server v took its range on day
// from former (a move for a fairer share, ring.Rebalance).
func (n *Node) tookRange(v id.ID, former ring.Node, day int64) {
	c := &n.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(day)
	if former.Peer != "" && former.Peer != n.self.Peer {
		c.former[v] = former
		c.since[v] = day
	}
}

// release forgets the claims newer owners made in g today: the range came
// back to this node (its predecessor died or left), and a URL claimed by a
// node that is gone would otherwise be fetched by no one.
func (n *Node) release(g ring.Range) {
	c := &n.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.away {
		if g.Contains(k) {
			delete(c.away, k)
		}
	}
}

// formerOwner returns the node that held v's range before this node took
// it today, if it did.
func (c *dayClaims) formerOwner(v id.ID, day int64) (ring.Node, bool) {
	if c.since[v] != day {
		return ring.Node{}, false
	}
	f, ok := c.former[v]
	return f, ok
}

// claimToFetch decides, just before a fetch, whether this node fetches
// url, owned by its virtual server v: false when a newer owner claimed it
// today or a former owner fetched it today. A URL it may fetch is marked
// as its own for the day.
func (n *Node) claimToFetch(ctx context.Context, url string, key id.ID, v ring.Node) bool {
	day := n.claimDay()
	c := &n.claims
	c.mu.Lock()
	c.roll(day)
	switch {
	case c.away[key] != "" || c.taken[key]:
		c.mu.Unlock()
		return false
	case c.mine[key]:
		c.mu.Unlock()
		return true
	}
	former, ok := c.formerOwner(v.ID, day)
	c.mu.Unlock()
	if ok {
		taken, err := n.claimFrom(ctx, former, url, day, v, 0)
		if err != nil {
			n.log.Debug("claim: former owner did not answer; fetching here", "url", url, "former", former, "err", err)
		}
		if taken {
			c.mu.Lock()
			c.roll(day)
			c.taken[key] = true
			c.mu.Unlock()
			n.counters.claimsTaken.Add(1)
			return false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(day)
	if c.away[key] != "" {
		return false // claimed away while we asked
	}
	c.mine[key] = true
	return true
}

// dropClaimed reports whether url is another node's for today (claimed
// away, or fetched today by a former owner): it leaves the queue without
// being passed on.
func (n *Node) dropClaimed(key id.ID) bool {
	c := &n.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(n.claimDay())
	return c.away[key] != "" || c.taken[key]
}

// claimFrom asks the former owner f whether this node may fetch url today.
func (n *Node) claimFrom(ctx context.Context, f ring.Node, url string, day int64, v ring.Node, hops int) (bool, error) {
	n.counters.claims.Add(1)
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	s, err := n.openStream(ctx, f.Contact, claimProtocol)
	if err != nil {
		return false, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, claimRequest{URL: url, Day: day, Vnode: v, Hops: hops}); err != nil {
		s.Reset()
		return false, fmt.Errorf("claim %s: %w", url, err)
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return false, fmt.Errorf("claim %s: %w", url, err)
	}
	var rep claimReply
	if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &rep); err != nil {
		s.Reset()
		return false, fmt.Errorf("claim %s: %w", url, err)
	}
	if rep.Err != "" {
		return false, fmt.Errorf("claim %s: %w: %s", url, errRemote, rep.Err)
	}
	return rep.Taken, nil
}

// handleClaim answers a claim from a member whose virtual server took the
// URL's range: taken when this node fetched or is fetching the URL today
// (or its own former owner says so), else the URL is recorded as claimed
// away and the answer is "yours".
func (n *Node) handleClaim(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(claimTimeout))
	m, ok := n.gate(s)
	if !ok {
		return
	}
	var q claimRequest
	if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &q); err != nil {
		n.counters.badFrames.Add(1)
		s.Reset()
		return
	}
	taken, err := n.answerClaim(n.ctx, m, q)
	rep := claimReply{Taken: taken}
	if err != nil {
		rep.Err = err.Error()
		if errors.Is(err, errRole) {
			n.refuseRole(m, string(claimProtocol), err)
		}
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// answerClaim implements handleClaim. The claimer's virtual server must be
// its own, verified, and lie between the URL's key and every virtual
// server of this node (it is the URL's owner, not this node).
func (n *Node) answerClaim(ctx context.Context, m ring.Node, q claimRequest) (bool, error) {
	key := id.OfString(q.URL)
	if q.Vnode.Peer != m.Peer || q.Vnode.Addr != m.Addr {
		return false, fmt.Errorf("%w: claim for %s sent by %s", errRole, q.Vnode, m.Contact)
	}
	if err := ring.CheckID(q.Vnode, ring.DefaultMaxVirtualServers); err != nil {
		return false, fmt.Errorf("%w: %w", errRole, err)
	}
	var ours ring.Node
	found := false
	for _, v := range n.ring.Vnodes() {
		if v.ID == key || (v.ID != q.Vnode.ID && id.InHalfOpen(v.ID, key, q.Vnode.ID)) {
			return false, fmt.Errorf("%w: this node's %s lies between %s and the claimer", errRole, v, q.URL)
		}
		if !found || id.InHalfOpen(v.ID, key, ours.ID) {
			ours, found = v, true
		}
	}
	day := n.claimDay()
	if q.Day != day {
		return false, nil // another day: nothing recorded for it here
	}
	if n.twinOf(ours.ID, q.Vnode) {
		// Another peer at the claimer's IP runs the same virtual server id
		// and is our predecessor: the claimer is the twin that will move
		// away (ring), so the URL is not its to fetch.
		return true, nil
	}
	c := &n.claims
	c.mu.Lock()
	c.roll(day)
	if p := c.away[key]; c.mine[key] || c.taken[key] || (p != "" && p != m.Peer) {
		// Fetched here, or by a former owner, or granted to another
		// claimer today (two nodes that both took the range: twins, or a
		// view that changed): not the claimer's to fetch.
		c.mu.Unlock()
		return true, nil
	}
	former, chained := c.formerOwner(ours.ID, day)
	c.mu.Unlock()
	if chained && former.Peer != m.Peer && q.Hops < maxClaimHops {
		// This node took the range today too: the URL may be its former
		// owner's.
		if taken, err := n.claimFrom(ctx, former, q.URL, day, ours, q.Hops+1); err == nil && taken {
			c.mu.Lock()
			c.roll(day)
			c.taken[key] = true
			c.mu.Unlock()
			return true, nil
		}
	}
	if st, err := n.store.State(ctx, q.URL); err == nil && !st.Checked.IsZero() && n.store.DayOf(st.Checked) == day {
		c.mu.Lock()
		c.roll(day)
		c.mine[key] = true // fetched here today, before a restart
		c.mu.Unlock()
		return true, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(day)
	if p := c.away[key]; c.mine[key] || (p != "" && p != m.Peer) {
		return true, nil
	}
	c.away[key] = m.Peer
	n.counters.claimsAway.Add(1)
	return false, nil
}

// twinOf reports whether local virtual server ours has, as predecessor,
// another peer's virtual server with v's id.
func (n *Node) twinOf(ours id.ID, v ring.Node) bool {
	for _, st := range n.ring.Status().Vnodes {
		if st.Node.ID == ours && st.Predecessor != nil {
			return st.Predecessor.ID == v.ID && st.Predecessor.Peer != v.Peer
		}
	}
	return false
}

// handoverProtocol carries, when a node leaves gracefully, the keys it
// fetched today in each of its ranges to the range's heir, which records
// them as fetched by a former owner: the heir takes the range over
// (takeover.go) without fetching them again that day.
const handoverProtocol protocol.ID = "/herod/handover/1.0.0"

// maxHandoverKeys bounds the keys of one handover (hex JSON within
// maxHeaderFrame).
const maxHandoverKeys = 90_000

// handover is the request of handoverProtocol.
type handover struct {
	Day   int64     `json:"day"`
	Vnode ring.Node `json:"vnode"` // the leaving virtual server
	Keys  []id.ID   `json:"keys"`
}

// handOver sends, before the node leaves, each local virtual server's keys
// fetched today to the first successor on another node, which inherits
// its range. Failures are logged: the heir then fetches those URLs again.
func (n *Node) handOver(ctx context.Context) {
	day := n.claimDay()
	c := &n.claims
	for _, v := range n.ring.Status().Vnodes {
		if !v.Range.Known {
			continue
		}
		var heir *ring.Node
		for _, s := range v.Successors {
			if s.Peer != n.self.Peer {
				heir = &s
				break
			}
		}
		if heir == nil {
			continue
		}
		c.mu.Lock()
		c.roll(day)
		var keys []id.ID
		for k := range c.mine {
			if v.Range.Contains(k) && len(keys) < maxHandoverKeys {
				keys = append(keys, k)
			}
		}
		c.mu.Unlock()
		if len(keys) == 0 {
			continue
		}
		if err := n.sendHandover(ctx, *heir, handover{Day: day, Vnode: v.Node, Keys: keys}); err != nil {
			n.log.Debug("handover of the day's fetches failed", "heir", heir, "err", err)
		}
	}
}

func (n *Node) sendHandover(ctx context.Context, to ring.Node, h handover) error {
	s, err := n.openStream(ctx, to.Contact, handoverProtocol)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, h); err != nil {
		s.Reset()
		return fmt.Errorf("handover: %w", err)
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return fmt.Errorf("handover: %w", err)
	}
	var rep claimReply
	if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &rep); err != nil {
		s.Reset()
		return fmt.Errorf("handover: %w", err)
	}
	if rep.Err != "" {
		return fmt.Errorf("handover: %w: %s", errRemote, rep.Err)
	}
	return nil
}

// handleHandover records the keys a leaving member fetched today. Only
// keys its virtual server owned by this node's view count: the leaving
// virtual server lies between the key and this node's first virtual
// server after it, with none of this node's in between.
func (n *Node) handleHandover(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(claimTimeout))
	m, ok := n.gate(s)
	if !ok {
		return
	}
	var h handover
	if err := wire.ReadJSON(bufio.NewReader(s), maxHeaderFrame, &h); err != nil || len(h.Keys) > maxHandoverKeys {
		n.counters.badFrames.Add(1)
		s.Reset()
		return
	}
	var rep claimReply
	if h.Vnode.Peer != m.Peer || h.Vnode.Addr != m.Addr || ring.CheckID(h.Vnode, ring.DefaultMaxVirtualServers) != nil {
		rep.Err = fmt.Sprintf("%v: handover for %s sent by %s", errRole, h.Vnode, m.Contact)
		n.refuseRole(m, string(handoverProtocol), errRole)
	} else if h.Day == n.claimDay() {
		vs := n.ring.Vnodes()
		c := &n.claims
		c.mu.Lock()
		c.roll(h.Day)
		for _, k := range h.Keys {
			if handedOver(k, h.Vnode.ID, vs) {
				c.taken[k] = true
			}
		}
		c.mu.Unlock()
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// handedOver reports whether key k was owned by the virtual server v by
// the view of a node running vs: v lies at or after k, and none of vs lies
// in [k, v).
func handedOver(k, v id.ID, vs []ring.Node) bool {
	for _, u := range vs {
		if u.ID == k || (u.ID != v && id.InHalfOpen(u.ID, k, v)) {
			return false
		}
	}
	return true
}

// claimDay is the day claims are made for: the crawler's current day (a
// day started by NewDay before the clock's changed is a new day for
// claims too), or the clock's before the crawler started its first.
func (n *Node) claimDay() int64 { return max(n.crawler.Today(), n.crawler.CurrentDay()) }
