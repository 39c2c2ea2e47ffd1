package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/node/purge"
)

// Ring-wide purge: package purge checks, records and carries out orders;
// the node signs its operator's orders (Node.Purge), exchanges orders with
// every replica it is about to sync with at the start of each replication
// round (/herod/purge/1.0.0, members only), before any file moves, and
// pushes a new order at once to the peers in its routing state
// (purge_proto.go). A node that was down catches up in its first round;
// replication never brings a purged version back, because Import refuses
// the purged peer's records from the moment its order is carried out.

// PurgeStats counts a node's purge orders.
type PurgeStats = purge.Stats

// purgeOrdersFile holds the orders a node has carried out, one JSON
// object a line, in its data directory.
const purgeOrdersFile = "purge-orders"

// setupPurge opens the node's purge orders, finishing any whose purge
// was cut short. Called from New, after the store opens.
func (n *Node) setupPurge() error {
	n.purgeSpread = make(chan struct{}, 1)
	b, err := purge.Open(context.Background(), purge.Config{
		Path:        filepath.Join(n.cfg.DataDir, purgeOrdersFile),
		Self:        n.self.Peer,
		Authorities: n.cfg.PurgeAuthorities,
		Store:       n.store,
		Verifier:    identity.Verifier{},
		Skew:        archive.MaxClockSkew,
		Taken: func(p string) {
			if pid, err := peer.Decode(p); err == nil {
				n.memberOK.forget(pid)
			}
			n.spreadPurge()
		},
		Logger: n.log.With("sub", "purge"),
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.purge = b
	n.host.SetStreamHandler(purgeProtocol, n.handlePurge)
	return nil
}

// Purge orders, as this node's operator, the purge of every capture peer
// signed: this node carries it out at once and passes it on; nodes that
// list this node as a purge authority carry it out too (the others refuse
// it). It returns how many versions this node removed.
func (n *Node) Purge(ctx context.Context, peerID string) (int, error) {
	if peerID == n.self.Peer {
		return 0, errors.New("node purge: a node cannot purge its own captures from its running archive")
	}
	o, err := purge.NewOrder(n.identity, peerID, time.Now())
	if err != nil {
		return 0, fmt.Errorf("node purge: %w", err)
	}
	removed, _, err := n.purge.Take(ctx, o)
	if err != nil {
		return removed, fmt.Errorf("node purge: %w", err)
	}
	return removed, nil
}

// PurgeStats returns the node's purge counters.
func (n *Node) PurgeStats() PurgeStats { return n.purge.Stats() }
