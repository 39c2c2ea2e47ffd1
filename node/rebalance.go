package node

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/herod-archive/herod/node/identity"
)

// DefaultRebalanceInterval is how often a node checks its share of the
// ring (Config.RebalanceInterval).
const DefaultRebalanceInterval = 10 * time.Minute

// rebalanceLoop runs ring.Rebalance every RebalanceInterval, with ±25 %
// jitter so that neighbours do not move at the same moment. A moved
// virtual server's new range is claimed from its former owner for the
// rest of the day (the ring reports it through Config.Took; claim.go),
// and the new indexes are saved.
func (n *Node) rebalanceLoop(ctx context.Context) {
	every := n.cfg.RebalanceInterval
	if every <= 0 {
		return
	}
	for {
		d := every*3/4 + time.Duration(rand.Int64N(int64(every/2)+1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		moves, err := n.ring.Rebalance(ctx)
		if err != nil {
			n.log.Debug("rebalance", "err", err)
			continue
		}
		if len(moves) > 0 {
			if err := identity.SaveIndexes(n.cfg.DataDir, n.ring.Indexes()); err != nil {
				n.log.Warn("rebalance: cannot save the virtual-server indexes", "err", err)
			}
		}
	}
}
