package dayclaim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// Protocol ids: a claim asks a URL's former owner whether it fetched the
// URL today; a handover gives a range's heir the keys fetched today in it.
const (
	ClaimProtocol    protocol.ID = "/herod/claim/1.0.0"
	HandoverProtocol protocol.ID = "/herod/handover/1.0.0"
)

// claimTimeout bounds one claim or handover exchange.
const claimTimeout = 10 * time.Second

// maxClaimFrame bounds a claim request or reply.
const maxClaimFrame = 16 << 10

// maxHandoverFrame bounds a handover request (a day's keys of a range).
const maxHandoverFrame = 4 << 20

// errRemote reports an error the remote node returned.
var errRemote = errors.New("node: remote error")

// Opener opens a stream of protocol p to the real node behind c, with a
// deadline.
type Opener = kit.Opener

// Transport is claim.Transport over libp2p streams: each claim is one
// exchange of ClaimProtocol, a session protocol (kit.Spec.Session), so a
// node's claims to one former owner share a stream the node keeps
// (kit.Pool).
type Transport struct {
	// Exchange sends one claim and reads its reply (the node's
	// kit.Pool.Exchange; kit.OpenExchanger opens a stream each).
	Exchange kit.Exchanger
	// Answers pings virtual server v (the ring's Answers).
	Answers func(ctx context.Context, v ring.Node) bool
}

var _ claim.Transport = Transport{}

// Claim implements claim.Transport.
func (t Transport) Claim(ctx context.Context, f ring.Node, q claim.Request) (claim.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	var rep claim.Reply
	err := t.Exchange(ctx, f.Contact, ClaimProtocol, func(s network.Stream, r *bufio.Reader) error {
		if err := wire.WriteJSON(s, q); err != nil {
			return err
		}
		return wire.ReadJSON(r, maxClaimFrame, &rep)
	})
	if err != nil {
		return claim.Reply{}, claimErr(q, err)
	}
	return rep, nil
}

// claimErr wraps the failure of claim q, opening its stream or on it. A
// reset is a refusal (claim.ErrRefused): the former owner is there and reset the
// stream before it answered, as its trust gate does while it cannot place
// the claimer in the ring yet, or its handler ran out of time. The reset
// may even reach Open, when the opener still waits for the protocol's
// negotiation to be confirmed. (One that is gone fails Open with no
// reset instead.)
func claimErr(q claim.Request, err error) error {
	if errors.Is(err, network.ErrReset) {
		return fmt.Errorf("claim %s: %w: %w", q.URL, claim.ErrRefused, err)
	}
	return fmt.Errorf("claim %s: %w", q.URL, err)
}

// Alive implements claim.Transport with the ring's ping.
func (t Transport) Alive(ctx context.Context, v ring.Node) bool {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	return t.Answers(ctx, v)
}

// Service answers a node's claim and handover streams from its claims
// and hands its fetches over to heirs. Every field but Logger must be
// set. Its handlers are registered through the node's kit (ClaimSpec,
// HandoverSpec), which admits members only and bounds each stream.
type Service struct {
	Claims     *claim.Claims
	Self       string       // this node's peer id
	Day        func() int64 // the day claims are made for
	Open       Opener
	wire.Hooks // Logger, optional
}

// ClaimSpec declares the claim protocol to the node's kit.
func (sv *Service) ClaimSpec() kit.Spec {
	return kit.Spec{ID: ClaimProtocol, Handle: sv.ServeClaim, MaxFrame: maxClaimFrame, Deadline: claimTimeout, MaxActive: 128,
		Session: true}
}

// HandoverSpec declares the handover protocol to the node's kit.
func (sv *Service) HandoverSpec() kit.Spec {
	return kit.Spec{ID: HandoverProtocol, Handle: sv.ServeHandover, MaxFrame: maxHandoverFrame, Deadline: claimTimeout, MaxActive: 4}
}

// ServeClaim answers a claim from a member whose virtual server took a
// URL's range (claim.Claims.Answer): the handler of ClaimProtocol.
func (sv *Service) ServeClaim(ctx context.Context, q *kit.Request) error {
	var req claim.Request
	if err := q.ReadJSON(maxClaimFrame, &req); err != nil {
		return err
	}
	rep, err := sv.Claims.Answer(ctx, q.Member, req, sv.Day())
	if err != nil {
		rep.Err = err.Error()
		if errors.Is(err, claim.ErrRole) {
			q.Refuse(err)
		}
	}
	return q.Reply(rep)
}

// HandOver sends, before the node leaves, each local virtual server's
// keys fetched today to the first successor on another node, which
// inherits its range; vs are the node's virtual servers (ring.Status).
// Failures are logged: the heir then fetches those URLs again.
func (sv *Service) HandOver(ctx context.Context, vs []ring.VnodeStatus) {
	day := sv.Day()
	for _, v := range vs {
		if !v.Range.Known {
			continue
		}
		var heir *ring.Node
		for _, s := range v.Successors {
			if s.Peer != sv.Self {
				heir = &s
				break
			}
		}
		if heir == nil {
			continue
		}
		sv.HandOverRange(ctx, v.Node, v.Range, *heir, day)
	}
}

// HandOverRange sends heir the keys fetched on day within r, which v
// owned. A failure is logged: the heir then fetches those URLs again.
func (sv *Service) HandOverRange(ctx context.Context, v ring.Node, r ring.Range, heir ring.Node, day int64) {
	keys := sv.Claims.Fetched(r, day)
	if len(keys) == 0 {
		return
	}
	if err := sv.sendHandover(ctx, heir, claim.Handover{Day: day, Vnode: v, Keys: keys}); err != nil {
		sv.Log().Debug("handover of the day's fetches failed", "heir", heir, "err", err)
	}
}

func (sv *Service) sendHandover(ctx context.Context, to ring.Node, h claim.Handover) error {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	s, err := sv.Open(ctx, to.Contact, HandoverProtocol)
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
	var rep claim.Reply
	if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &rep); err != nil {
		s.Reset()
		return fmt.Errorf("handover: %w", err)
	}
	if rep.Err != "" {
		return fmt.Errorf("handover: %w: %s", errRemote, rep.Err)
	}
	return nil
}

// ServeHandover records the keys a leaving member fetched today
// (claim.Claims.HandedOver): the handler of HandoverProtocol.
func (sv *Service) ServeHandover(_ context.Context, q *kit.Request) error {
	var h claim.Handover
	if err := q.ReadJSON(maxHandoverFrame, &h); err != nil {
		return err
	}
	var rep claim.Reply
	if err := sv.Claims.HandedOver(q.Member, h, sv.Day()); err != nil {
		rep.Err = err.Error()
		q.Refuse(err)
	}
	return q.Reply(rep)
}
