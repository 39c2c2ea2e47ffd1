package node

import (
	"context"
	"errors"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// errNoDHT reports a resolution asked before the DHT started.
var errNoDHT = errors.New("node: DHT not running")

// dhtResolver is the node as the ring's Resolver: it finds, through the
// Kademlia DHT, the new address of a ring peer that stopped answering at its
// old one. The DHT starts in Start, after the ring was created.
type dhtResolver Node

// Resolve implements ring.Resolver.
func (r *dhtResolver) Resolve(ctx context.Context, peer string) (ring.Contact, error) {
	d := (*Node)(r).dht.Load()
	if d == nil {
		return ring.Contact{}, errNoDHT
	}
	return d.Resolve(ctx, peer)
}

// startDHT runs kad-dht in server mode on herod's private protocol prefix,
// bootstrapped from the members given to --join. A node whose bootstrap
// members all fail still runs the DHT (others may bootstrap from it); the
// ring join that follows reports the failure.
func (n *Node) startDHT(ctx context.Context, bootstrap []ring.Contact) {
	d, err := p2p.NewDHT(ctx, n.host, bootstrap)
	if err != nil {
		n.log.Warn("dht: bootstrap failed; running without bootstrap peers", "err", err)
		if d, err = p2p.NewDHT(ctx, n.host, nil); err != nil {
			n.log.Warn("dht: not running", "err", err)
			return
		}
	}
	n.dht.Store(d)
}

// dhtContacts returns herod nodes the DHT knows, to join through when the
// configured members do not answer.
func (n *Node) dhtContacts() []ring.Contact {
	if d := n.dht.Load(); d != nil {
		return d.Peers()
	}
	return nil
}
