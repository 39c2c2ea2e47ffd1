package ring

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// How long verification results are cached.
const (
	verifiedTTL = 10 * time.Minute
	refusedTTL  = time.Minute
	recentCap   = 16
)

// RefusedPeer records one refused virtual server claim.
type RefusedPeer struct {
	Node   Node      `json:"node"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// verifier caches which contacts answered as themselves at their address
// and which lied, so each real node is checked once per TTL, not once per
// message.
type verifier struct {
	mu   sync.Mutex
	ok   map[Contact]time.Time
	bad  map[Contact]time.Time
	last []RefusedPeer
}

func (v *verifier) init() {
	v.ok = make(map[Contact]time.Time)
	v.bad = make(map[Contact]time.Time)
}

func (v *verifier) recent() []RefusedPeer {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]RefusedPeer(nil), v.last...)
}

// state returns +1 for a cached pass, -1 for a cached refusal, 0 unknown.
func (v *verifier) state(c Contact, now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.ok[c]; ok {
		if now.Before(t) {
			return 1
		}
		delete(v.ok, c)
	}
	if t, ok := v.bad[c]; ok {
		if now.Before(t) {
			return -1
		}
		delete(v.bad, c)
	}
	return 0
}

// Admit reports whether n may enter this node's routing tables: its id
// must be VirtualID(Addr, Index) with Index < MaxVirtualServers, and its
// address must answer as its peer on a direct authenticated connection
// (Transport.Verify). Results are cached per contact; refusals are
// counted in Counters.Refused.
func (r *Ring) Admit(ctx context.Context, n Node) error {
	if err := CheckID(n, r.cfg.MaxVirtualServers); err != nil {
		r.refuse(n, err)
		return err
	}
	self := r.cfg.Self
	switch {
	case n.Contact == self:
		return nil
	case n.Peer == self.Peer || n.Addr == self.Addr:
		err := fmt.Errorf("%w: %s claims part of this node's identity", ErrBadPeer, n.Contact)
		r.refuse(n, err)
		return err
	}
	now := r.clock.Now()
	switch r.ver.state(n.Contact, now) {
	case 1:
		return nil
	case -1:
		return fmt.Errorf("%w: %s (cached)", ErrBadPeer, n.Contact)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	err := r.tr.Verify(ctx, n.Contact)
	if err != nil {
		if errors.Is(err, ErrBadPeer) {
			r.refuse(n, err)
		}
		return fmt.Errorf("ring admit %s: %w", n, err)
	}
	r.ver.mu.Lock()
	r.ver.ok[n.Contact] = now.Add(verifiedTTL)
	r.ver.mu.Unlock()
	r.n.verified.Add(1)
	return nil
}

func (r *Ring) refuse(n Node, err error) {
	r.n.refused.Add(1)
	r.log.Warn("ring: refused virtual server", "node", n.String(), "peer", n.Peer, "err", err)
	now := r.clock.Now()
	r.ver.mu.Lock()
	defer r.ver.mu.Unlock()
	r.ver.bad[n.Contact] = now.Add(refusedTTL)
	r.ver.last = append(r.ver.last, RefusedPeer{Node: n, Reason: err.Error(), At: now})
	if len(r.ver.last) > recentCap {
		r.ver.last = r.ver.last[len(r.ver.last)-recentCap:]
	}
}

// admitAll returns the nodes of in that pass Admit and are not suspected
// dead, in order.
func (r *Ring) admitAll(ctx context.Context, in []Node) []Node {
	out := make([]Node, 0, len(in))
	for _, n := range in {
		r.mu.Lock()
		sus := r.isSuspect(n.Peer)
		r.mu.Unlock()
		if sus && n.Peer != r.cfg.Self.Peer {
			continue
		}
		if r.Admit(ctx, n) == nil {
			out = append(out, n)
		}
	}
	return out
}
