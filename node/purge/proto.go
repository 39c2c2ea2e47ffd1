package purge

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// Protocol exchanges purge orders between members: one JSON request
// (the sender's digest of its orders, and orders it pushes), one JSON
// reply (the receiver's digest, and all its orders when the digests
// differ). Members only; a request or reply is at most maxFrame and
// holds at most MaxOrders orders.
const Protocol protocol.ID = "/herod/purge/1.0.0"

// Request is a purge protocol request.
type Request struct {
	Digest string  `json:"digest"`
	Orders []Order `json:"orders,omitempty"`
}

// Reply answers a Request. Refused counts the pushed orders the receiver
// refused, Error names the first refusal.
type Reply struct {
	Digest  string  `json:"digest"`
	Orders  []Order `json:"orders,omitempty"`
	Refused int     `json:"refused,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// Timeout bounds one exchange: the receiver carries out new orders
// before it answers, which scans its archive.
const Timeout = 5 * time.Minute

// maxFrame bounds one request or reply of the purge protocol.
const maxFrame = 512 << 10

// Exchanger carries a Book's orders between members over Protocol: it
// answers their exchanges (Serve, registered through the node's kit:
// Spec), exchanges with one replica (Exchange) and floods a new order to
// the peers in the routing state (Spread, SpreadLoop). Book, Open and
// Neighbours must be set before it handles a stream or runs SpreadLoop;
// Spread may be called before.
type Exchanger struct {
	Book *Book
	Self string // this node's peer id: never pushed to
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	// Neighbours returns the peers in this node's routing state
	// (predecessors, successors, fingers), in the order to push to;
	// repeats and this node are skipped.
	Neighbours func() []ring.Contact
	wire.Hooks // Logger, optional

	spread chan struct{} // a token: push the orders to the neighbours
}

// NewExchanger returns an Exchanger ready for Spread; its fields are set
// by the caller.
func NewExchanger() *Exchanger { return &Exchanger{spread: make(chan struct{}, 1)} }

// Spec declares the purge protocol to the node's kit: members only, one
// request frame, a deadline long enough for the purge a new order runs.
func (x *Exchanger) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: x.Serve, MaxFrame: maxFrame, Deadline: Timeout, MaxActive: 4}
}

// Serve answers a member's purge exchange: the handler of Protocol. It
// carries out the pushed orders it trusts before it replies.
func (x *Exchanger) Serve(ctx context.Context, q *kit.Request) error {
	var req Request
	if err := q.ReadJSON(maxFrame, &req); err != nil {
		return err
	}
	var rep Reply
	if len(req.Orders) > MaxOrders {
		rep.Error = fmt.Sprintf("node: %d purge orders in one request, at most %d", len(req.Orders), MaxOrders)
		return q.Reply(rep)
	}
	for _, o := range req.Orders {
		if _, _, err := x.Book.Take(ctx, o); err != nil {
			rep.Refused++
			if rep.Error == "" {
				rep.Error = err.Error()
			}
		}
	}
	orders, digest := x.Book.List()
	rep.Digest = digest
	if req.Digest != digest {
		rep.Orders = orders
	}
	return q.Reply(rep)
}

// Digest names the orders the Book holds (Book.List).
func (x *Exchanger) Digest() string {
	_, d := x.Book.List()
	return d
}

// call sends one purge request to c.
func (x *Exchanger) call(ctx context.Context, c ring.Contact, req Request) (Reply, error) {
	var rep Reply
	s, err := x.Open(ctx, c, Protocol)
	if err != nil {
		return rep, err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(Timeout))
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	if err := wire.WriteJSON(s, req); err != nil {
		s.Reset()
		return rep, fmt.Errorf("purge request to %s: %w", c.Addr, err)
	}
	_ = s.CloseWrite()
	if err := wire.ReadJSON(bufio.NewReader(s), maxFrame, &rep); err != nil {
		s.Reset()
		return rep, fmt.Errorf("purge reply from %s: %w", c.Addr, err)
	}
	return rep, nil
}

// Exchange brings this node's orders and c's together: it takes the
// orders c holds that it lacks (those it trusts), then pushes its own if
// c still lacks some. It returns the digest both hold afterwards, or ""
// when they still differ (c holds an order this node refuses, or the
// other way round).
func (x *Exchanger) Exchange(ctx context.Context, c ring.Contact) (string, error) {
	_, digest := x.Book.List()
	rep, err := x.call(ctx, c, Request{Digest: digest})
	if err != nil {
		return "", err
	}
	if len(rep.Orders) > MaxOrders {
		return "", fmt.Errorf("purge reply from %s: %d orders, at most %d", c.Addr, len(rep.Orders), MaxOrders)
	}
	for _, o := range rep.Orders {
		if _, _, err := x.Book.Take(ctx, o); err != nil && ctx.Err() != nil {
			return "", err
		}
	}
	mine, digest := x.Book.List()
	if digest == rep.Digest {
		return digest, nil
	}
	if len(mine) == 0 {
		return "", nil
	}
	rep, err = x.call(ctx, c, Request{Digest: digest, Orders: mine})
	if err != nil {
		return "", err
	}
	if rep.Refused > 0 {
		x.Log().Debug("a replica refused purge orders", "peer", c.Peer, "refused", rep.Refused, "err", rep.Error)
	}
	if rep.Digest == digest {
		return digest, nil
	}
	return "", nil
}

// Spread asks SpreadLoop to push this node's orders to the peers in its
// routing state. It never blocks.
func (x *Exchanger) Spread() {
	select {
	case x.spread <- struct{}{}:
	default:
	}
}

// SpreadLoop pushes this node's orders to every distinct peer in its
// routing state (Neighbours) each time Spread asks, until ctx ends; a
// peer that takes a new order passes it on the same way, so an order
// floods the ring in a few hops. Nodes it misses (down, or not reached)
// catch up in their next replication round.
func (x *Exchanger) SpreadLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.spread:
		}
		mine, digest := x.Book.List()
		if len(mine) == 0 {
			continue
		}
		seen := map[string]bool{x.Self: true}
		for _, c := range x.Neighbours() {
			if seen[c.Peer] || c.Peer == "" {
				continue
			}
			seen[c.Peer] = true
			cctx, cancel := context.WithTimeout(ctx, Timeout)
			if _, err := x.call(cctx, c, Request{Digest: digest, Orders: mine}); err != nil && ctx.Err() == nil {
				x.Log().Debug("purge orders not pushed", "peer", c.Peer, "err", err)
			}
			cancel()
			if ctx.Err() != nil {
				return
			}
		}
	}
}
