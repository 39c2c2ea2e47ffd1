package node

import (
	"context"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/dayclaim"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// One fetch per URL and day while the ring forms and changes: the
// decisions are ring/claim's; package dayclaim carries them over libp2p
// (claimProtocol, handoverProtocol) and queues the ranges taken over
// mid-day, and checks at fetch time that a URL is still this node's
// (dayclaim.Relocator); this file wires them to the crawler and the
// ring's joins (Config.Took) and moves (Config.Moving).

const (
	claimProtocol    = dayclaim.ClaimProtocol
	handoverProtocol = dayclaim.HandoverProtocol
)

// setupClaims builds the node's claims over libp2p, the service that
// answers and sends them, and the take-over watch. Called from Start once
// the ring exists (buildRing), before the handlers are registered.
func (n *Node) setupClaims() {
	n.claims = claim.New(claim.Config{
		Peer:      n.self.Peer,
		Ring:      n.ring,
		Transport: dayclaim.Transport{Exchange: n.pool.Exchange, Answers: n.ring.Answers},
		History:   n.fetchedOn,
		Logger:    n.log.With("sub", "claim"),
	})
	n.dayclaim = &dayclaim.Service{
		Claims: n.claims,
		Self:   n.self.Peer,
		Day:    n.claimDay,
		Open:   n.openStream,
		Hooks:  wire.Hooks{Logger: n.log},
	}
	n.takeOver = &dayclaim.TakeOver{
		Ring:   n.ring,
		Claims: n.claims,
		Day:    n.claimDay,
		Queue:  func(ctx context.Context, in func(string) bool) (int, error) { return n.crawler.TakeOver(ctx, in) },
		Announce: func(ctx context.Context, g ring.Range) {
			if n.quietTakeOver.Load() {
				return
			}
			if k, err := n.links.AnnounceTakeOver(ctx, g); err != nil && ctx.Err() == nil {
				n.log.Warn("announcing a take-over failed for some nodes; the replicated known set still carries the range's URLs", "told", k, "err", err)
			}
		},
		Logger: n.log,
	}
}

// fetchedOn reports whether the store records a fetch of url on day (a
// fetch before this process started; later ones are in the claims): its
// crawl state's or, for a 304, its check's (archive.Store.CheckedOn).
func (n *Node) fetchedOn(ctx context.Context, url string, day int64) bool {
	ok, err := n.store.CheckedOn(ctx, url, day)
	return err == nil && ok
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

// movingVnode is the ring's Config.Moving: before local virtual server v
// leaves its index for another, the keys fetched today in its range r go
// to heir, which inherits the range, so that its take-over does not fetch
// them again.
func (n *Node) movingVnode(ctx context.Context, v ring.Node, r ring.Range, heir ring.Node) {
	if n.claims == nil {
		return
	}
	n.dayclaim.HandOverRange(ctx, v, r, heir, n.claimDay())
}
