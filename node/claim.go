package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// One fetch per URL and day while the ring forms and changes: the
// decisions are ring/claim's; this file carries them over libp2p
// (claimProtocol, handoverProtocol) and wires them to the crawler
// (relocate.go), the ring's joins (Config.Took) and take-overs
// (takeover.go).

const (
	claimProtocol    protocol.ID = "/herod/claim/1.0.0"
	handoverProtocol protocol.ID = "/herod/handover/1.0.0"
)

// claimTimeout bounds one claim or handover exchange.
const claimTimeout = 10 * time.Second

// maxClaimFrame bounds a claim request or reply.
const maxClaimFrame = 16 << 10

// newClaims builds the node's claims over libp2p.
func (n *Node) newClaims() *claim.Claims {
	return claim.New(claim.Config{
		Peer:      n.self.Peer,
		Ring:      n.ring,
		Transport: claimTransport{n},
		History:   n.fetchedOn,
		Logger:    n.log.With("sub", "claim"),
	})
}

// fetchedOn reports whether the store records a fetch of url on day (a
// fetch before this process started; later ones are in the claims).
func (n *Node) fetchedOn(ctx context.Context, url string, day int64) bool {
	st, err := n.store.State(ctx, url)
	return err == nil && !st.Checked.IsZero() && n.store.DayOf(st.Checked) == day
}

// claimDay is the day claims are made for: the crawler's current day (a
// day started by NewDay before the clock's changed is a new day for
// claims too), or the clock's before the crawler started its first.
func (n *Node) claimDay() int64 { return max(n.crawler.Today(), n.crawler.CurrentDay()) }

// tookRange records that local virtual server v took its range from
// former: the ring's Config.Took, at every join of a virtual server. It
// runs under the ring's lock, so it takes no lock the crawler holds while
// it asks the ring (claimDay reads the clock and the queue's day without
// one; a new day asks the ring who owns each URL under the queue's lock).
func (n *Node) tookRange(v, former ring.Node) {
	if n.claims != nil {
		n.claims.Took(v.ID, former, n.claimDay())
	}
}

// claimTransport is claim.Transport over libp2p streams.
type claimTransport struct{ n *Node }

// Claim implements claim.Transport.
func (t claimTransport) Claim(ctx context.Context, f ring.Node, q claim.Request) (claim.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	s, err := t.n.openStream(ctx, f.Contact, claimProtocol)
	if err != nil {
		return claim.Reply{}, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, q); err != nil {
		s.Reset()
		return claim.Reply{}, fmt.Errorf("claim %s: %w", q.URL, err)
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return claim.Reply{}, fmt.Errorf("claim %s: %w", q.URL, err)
	}
	var rep claim.Reply
	if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &rep); err != nil {
		s.Reset()
		return claim.Reply{}, fmt.Errorf("claim %s: %w", q.URL, err)
	}
	return rep, nil
}

// Alive implements claim.Transport with the ring's ping.
func (t claimTransport) Alive(ctx context.Context, v ring.Node) bool {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	return t.n.ring.Answers(ctx, v)
}

// handleClaim answers a claim from a member whose virtual server took a
// URL's range (claim.Claims.Answer).
func (n *Node) handleClaim(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(claimTimeout))
	m, ok := n.gate(s)
	if !ok {
		return
	}
	var q claim.Request
	if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &q); err != nil {
		n.counters.badFrames.Add(1)
		s.Reset()
		return
	}
	rep, err := n.claims.Answer(n.ctx, m, q, n.claimDay())
	if err != nil {
		rep.Err = err.Error()
		if errors.Is(err, claim.ErrRole) {
			n.refuseRole(m, string(claimProtocol), err)
		}
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// handOver sends, before the node leaves, each local virtual server's keys
// fetched today to the first successor on another node, which inherits
// its range. Failures are logged: the heir then fetches those URLs again.
func (n *Node) handOver(ctx context.Context) {
	day := n.claimDay()
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
		n.handOverRange(ctx, v.Node, v.Range, *heir, day)
	}
}

// movingVnode is the ring's Config.Moving: before local virtual server v
// leaves its index for another, the keys fetched today in its range r go
// to heir, which inherits the range, so that its take-over does not fetch
// them again.
func (n *Node) movingVnode(ctx context.Context, v ring.Node, r ring.Range, heir ring.Node) {
	if n.claims == nil {
		return
	}
	n.handOverRange(ctx, v, r, heir, n.claimDay())
}

// handOverRange sends heir the keys fetched on day within r, which v owned.
// A failure is logged: the heir then fetches those URLs again.
func (n *Node) handOverRange(ctx context.Context, v ring.Node, r ring.Range, heir ring.Node, day int64) {
	keys := n.claims.Fetched(r, day)
	if len(keys) == 0 {
		return
	}
	if err := n.sendHandover(ctx, heir, claim.Handover{Day: day, Vnode: v, Keys: keys}); err != nil {
		n.log.Debug("handover of the day's fetches failed", "heir", heir, "err", err)
	}
}

func (n *Node) sendHandover(ctx context.Context, to ring.Node, h claim.Handover) error {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
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

// handleHandover records the keys a leaving member fetched today
// (claim.Claims.HandedOver).
func (n *Node) handleHandover(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(claimTimeout))
	m, ok := n.gate(s)
	if !ok {
		return
	}
	var h claim.Handover
	if err := wire.ReadJSON(bufio.NewReader(s), maxHeaderFrame, &h); err != nil {
		n.counters.badFrames.Add(1)
		s.Reset()
		return
	}
	var rep claim.Reply
	if err := n.claims.HandedOver(m, h, n.claimDay()); err != nil {
		rep.Err = err.Error()
		n.refuseRole(m, string(handoverProtocol), err)
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
	}
}

// claimedAway reports whether key is another node's today by a claim.
func (n *Node) claimedAway(key id.ID) bool { return n.claims.Dropped(key, n.claimDay()) }
