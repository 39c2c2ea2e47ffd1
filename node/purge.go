package node

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/node/purge"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// Ring-wide purge: package purge checks, records and carries out orders
// and carries them between members (/herod/purge/1.0.0, members only,
// purge.Exchanger); the node signs its operator's orders (Node.Purge),
// exchanges orders with every replica it is about to sync with at the
// start of each replication round, before any file moves (purgeRound),
// and pushes a new order at once to the peers in its routing state
// (purge.Neighbours). A node that was down catches up in its first round;
// replication never brings a purged version back, because Import refuses
// the purged peer's records from the moment its order is carried out.

// PurgeStats counts a node's purge orders.
type PurgeStats = purge.Stats

// purgeProtocol exchanges purge orders between members (package purge).
const purgeProtocol = purge.Protocol

// purgeOrdersFile holds the orders a node has carried out, one JSON
// object a line, in its data directory.
const purgeOrdersFile = "purge-orders"

// setupPurge opens the node's purge orders, finishing any whose purge
// was cut short, and makes the purge protocol (Start registers it).
// Called from New, after the store opens.
func (n *Node) setupPurge() error {
	x := purge.NewExchanger() // made first: Taken spreads through it
	b, err := purge.Open(context.Background(), purge.Config{
		Path:        filepath.Join(n.cfg.DataDir, purgeOrdersFile),
		Self:        n.self.Peer,
		Authorities: n.cfg.PurgeAuthorities,
		Store:       n.store,
		Verifier:    identity.Verifier{},
		Skew:        archive.MaxClockSkew,
		Taken: func(p string) {
			if pid, err := peer.Decode(p); err == nil {
				n.members.Forget(pid)
			}
			x.Spread()
		},
		Ruled:  func(rs []access.Rule) { n.access.table.Replace(access.Ring, rs) },
		Logger: n.log.With("sub", "purge"),
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.purge = b
	n.access.table.Replace(access.Ring, b.AccessRules())
	x.Book, x.Self, x.Open = b, n.self.Peer, n.openStream
	x.Neighbours = func() []ring.Contact { return purge.Neighbours(n.ring.Status()) }
	x.Logger = n.log
	n.purgeX = x // its handler is registered in Start
	return nil
}

// Purge orders, as this node's operator, the purge of every capture peer
// signed: this node carries it out at once and passes it on; nodes that
// list this node as a purge authority carry it out too (the others refuse
// it). It returns how many versions this node removed.
func (n *Node) Purge(ctx context.Context, peerID string) (int, error) {
	removed, err := n.purge.Issue(ctx, n.identity, peerID)
	if err != nil {
		return removed, fmt.Errorf("node purge: %w", err)
	}
	return removed, nil
}

// PurgeStats returns the node's purge counters.
func (n *Node) PurgeStats() PurgeStats { return n.purge.Stats() }

// replicaStore returns the store replication syncs into: imports wait
// while a purge runs (purge.Book.Gated).
func (n *Node) replicaStore() replicate.Local { return n.purge.Gated(n.store) }
