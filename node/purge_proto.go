package node

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/purge"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// purgeProtocol exchanges purge orders between members: one JSON request
// (the sender's digest of its orders, and orders it pushes), one JSON
// reply (the receiver's digest, and all its orders when the digests
// differ). Members only; a request or reply is at most maxPurgeFrame and
// holds at most purge.MaxOrders orders.
const purgeProtocol protocol.ID = "/herod/purge/1.0.0"

// purgeRequest is a purge protocol request.
type purgeRequest struct {
	Digest string        `json:"digest"`
	Orders []purge.Order `json:"orders,omitempty"`
}

// purgeReply answers a purgeRequest. Refused counts the pushed orders
// the receiver refused, Error names the first refusal.
type purgeReply struct {
	Digest  string        `json:"digest"`
	Orders  []purge.Order `json:"orders,omitempty"`
	Refused int           `json:"refused,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// purgeTimeout bounds one exchange: the receiver carries out new orders
// before it answers, which scans its archive.
const purgeTimeout = 5 * time.Minute

// maxPurgeFrame bounds one request or reply of the purge protocol.
const maxPurgeFrame = 512 << 10

// handlePurge answers a member's purge exchange.
func (n *Node) handlePurge(s network.Stream) {
	defer s.Close()
	if _, ok := n.gate(s); !ok {
		return
	}
	_ = s.SetDeadline(time.Now().Add(purgeTimeout))
	var req purgeRequest
	if err := wire.ReadJSON(bufio.NewReader(s), maxPurgeFrame, &req); err != nil {
		n.counters.badFrames.Add(1)
		s.Reset()
		return
	}
	var rep purgeReply
	if len(req.Orders) > purge.MaxOrders {
		rep.Error = fmt.Sprintf("node: %d purge orders in one request, at most %d", len(req.Orders), purge.MaxOrders)
		_ = wire.WriteJSON(s, rep)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), purgeTimeout)
	defer cancel()
	for _, o := range req.Orders {
		if _, _, err := n.purge.Take(ctx, o); err != nil {
			rep.Refused++
			if rep.Error == "" {
				rep.Error = err.Error()
			}
		}
	}
	orders, digest := n.purge.List()
	rep.Digest = digest
	if req.Digest != digest {
		rep.Orders = orders
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// callPurge sends one purge request to c.
func (n *Node) callPurge(ctx context.Context, c ring.Contact, req purgeRequest) (purgeReply, error) {
	var rep purgeReply
	s, err := n.openStream(ctx, c, purgeProtocol)
	if err != nil {
		return rep, err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(purgeTimeout))
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	if err := wire.WriteJSON(s, req); err != nil {
		s.Reset()
		return rep, fmt.Errorf("purge request to %s: %w", c.Addr, err)
	}
	_ = s.CloseWrite()
	if err := wire.ReadJSON(bufio.NewReader(s), maxPurgeFrame, &rep); err != nil {
		s.Reset()
		return rep, fmt.Errorf("purge reply from %s: %w", c.Addr, err)
	}
	return rep, nil
}

// exchangePurge brings this node's orders and c's together: it takes the
// orders c holds that it lacks (those it trusts), then pushes its own if
// c still lacks some. It returns the digest both hold afterwards, or ""
// when they still differ (c holds an order this node refuses, or the
// other way round).
func (n *Node) exchangePurge(ctx context.Context, c ring.Contact) (string, error) {
	_, digest := n.purge.List()
	rep, err := n.callPurge(ctx, c, purgeRequest{Digest: digest})
	if err != nil {
		return "", err
	}
	if len(rep.Orders) > purge.MaxOrders {
		return "", fmt.Errorf("purge reply from %s: %d orders, at most %d", c.Addr, len(rep.Orders), purge.MaxOrders)
	}
	for _, o := range rep.Orders {
		if _, _, err := n.purge.Take(ctx, o); err != nil && ctx.Err() != nil {
			return "", err
		}
	}
	mine, digest := n.purge.List()
	if digest == rep.Digest {
		return digest, nil
	}
	if len(mine) == 0 {
		return "", nil
	}
	rep, err = n.callPurge(ctx, c, purgeRequest{Digest: digest, Orders: mine})
	if err != nil {
		return "", err
	}
	if rep.Refused > 0 {
		n.log.Debug("a replica refused purge orders", "peer", c.Peer, "refused", rep.Refused, "err", rep.Error)
	}
	if rep.Digest == digest {
		return digest, nil
	}
	return "", nil
}

// spreadPurge asks the spreading loop to push this node's orders to the
// peers in its routing state.
func (n *Node) spreadPurge() {
	select {
	case n.purgeSpread <- struct{}{}:
	default:
	}
}

// spreadLoop pushes this node's orders to every distinct peer in its
// routing state (predecessors, successors, fingers) each time spreadPurge
// asks; a peer that takes a new order passes it on the same way, so an
// order floods the ring in a few hops. Nodes it misses (down, or not
// reached) catch up in their next replication round.
func (n *Node) spreadLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.purgeSpread:
		}
		mine, digest := n.purge.List()
		if len(mine) == 0 {
			continue
		}
		seen := map[string]bool{n.self.Peer: true}
		for _, v := range n.ring.Status().Vnodes {
			var cs []ring.Contact
			if v.Predecessor != nil {
				cs = append(cs, v.Predecessor.Contact)
			}
			for _, s := range v.Successors {
				cs = append(cs, s.Contact)
			}
			for _, f := range v.Fingers {
				cs = append(cs, f.Node.Contact)
			}
			for _, c := range cs {
				if seen[c.Peer] || c.Peer == "" {
					continue
				}
				seen[c.Peer] = true
				cctx, cancel := context.WithTimeout(ctx, purgeTimeout)
				if _, err := n.callPurge(cctx, c, purgeRequest{Digest: digest, Orders: mine}); err != nil && ctx.Err() == nil {
					n.log.Debug("purge orders not pushed", "peer", c.Peer, "err", err)
				}
				cancel()
				if ctx.Err() != nil {
					return
				}
			}
		}
	}
}

// gatedStore is the store replication imports into: imports wait while
// a purge runs (purge.Book.Importing).
type gatedStore struct {
	*archive.Store
	p *purge.Book
}

// Import implements replicate.Local.
func (g gatedStore) Import(ctx context.Context, name string, data []byte) (v archive.Version, added bool, err error) {
	g.p.Importing(func() { v, added, err = g.Store.Import(ctx, name, data) })
	return v, added, err
}

var _ replicate.Local = gatedStore{}

// replicaStore returns the store replication syncs into.
func (n *Node) replicaStore() replicate.Local { return gatedStore{n.store, n.purge} }

// purgeRecheck is how many rounds a node goes without exchanging orders
// with a replica it last agreed with, while its own orders have not
// changed. A replica that missed an order is reached sooner: the nodes
// that took it hold a new digest and exchange with it in their next round,
// and a restarted node, which remembers no agreement, exchanges in its
// first.
const purgeRecheck = 10

// purgeAgreement is the last exchange of orders with one replica.
type purgeAgreement struct {
	digest string // the digest both held
	round  int64  // the round it was reached in
}

// purgeRound exchanges orders with the replicas of the ranges this round
// syncs, before any file moves, unless this node agreed with a replica on
// its current orders fewer than purgeRecheck rounds ago.
func (r *replicator) purgeRound(ctx context.Context, vs []ring.VnodeStatus) {
	_, digest := r.n.purge.List()
	r.mu.Lock()
	round := r.st.Rounds
	r.mu.Unlock()
	seen := map[string]bool{}
	for _, v := range vs {
		if !v.Range.Known {
			continue
		}
		for _, c := range r.replicasOf(ctx, v) {
			if seen[c.Peer] {
				continue
			}
			seen[c.Peer] = true
			r.purgeMu.Lock()
			a, ok := r.purgeAgreed[c.Peer]
			r.purgeMu.Unlock()
			if ok && a.digest == digest && round-a.round < purgeRecheck {
				continue
			}
			agreed, err := r.n.exchangePurge(ctx, c)
			if err != nil {
				if ctx.Err() == nil {
					r.fail(fmt.Errorf("purge orders with %s: %w", c.Addr, err))
				}
				continue
			}
			r.purgeMu.Lock()
			if agreed == "" {
				delete(r.purgeAgreed, c.Peer)
			} else {
				if len(r.purgeAgreed) >= maxMemberCache {
					r.purgeAgreed = map[string]purgeAgreement{}
				}
				r.purgeAgreed[c.Peer] = purgeAgreement{digest: agreed, round: round}
			}
			r.purgeMu.Unlock()
		}
	}
}
