package p2p

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/herod-archive/herod/ring"
)

// ErrNoDHT reports a resolution asked of a LateDHT before it started.
var ErrNoDHT = errors.New("p2p: DHT not running")

// LateDHT is a node's DHT as the ring's Resolver from the ring's
// creation, though the DHT itself starts later, when the node joins
// (Start): until then it resolves nothing (ErrNoDHT) and knows no peers.
// It is safe for concurrent use.
type LateDHT struct {
	d atomic.Pointer[DHT]
}

var _ ring.Resolver = (*LateDHT)(nil)

// Start runs the DHT on h (NewDHT), bootstrapped from the members in
// bootstrap. A node whose bootstrap members all fail still runs the DHT,
// without them (others may bootstrap from it; the ring join that follows
// reports the failure); both that and a DHT that cannot run at all are
// logged to log as warnings. Start is called at most once.
func (l *LateDHT) Start(ctx context.Context, h host.Host, bootstrap []ring.Contact, log *slog.Logger) {
	d, err := NewDHT(ctx, h, bootstrap)
	if err != nil {
		log.Warn("dht: bootstrap failed; running without bootstrap peers", "err", err)
		if d, err = NewDHT(ctx, h, nil); err != nil {
			log.Warn("dht: not running", "err", err)
			return
		}
	}
	l.d.Store(d)
}

// Resolve implements ring.Resolver (DHT.Resolve).
func (l *LateDHT) Resolve(ctx context.Context, peer string) (ring.Contact, error) {
	d := l.d.Load()
	if d == nil {
		return ring.Contact{}, ErrNoDHT
	}
	return d.Resolve(ctx, peer)
}

// Peers returns the herod nodes the DHT knows (DHT.Peers), none before
// it started.
func (l *LateDHT) Peers() []ring.Contact {
	if d := l.d.Load(); d != nil {
		return d.Peers()
	}
	return nil
}

// Close stops the DHT if it started.
func (l *LateDHT) Close() error {
	if d := l.d.Load(); d != nil {
		return d.Close()
	}
	return nil
}
