package replication

import (
	"context"
	"fmt"

	"github.com/herod-archive/herod/ring"
)

// maxPurgeAgreed bounds the replicas whose last agreement on purge orders
// is remembered; a full memory is cleared (it costs exchanges, not
// correctness).
const maxPurgeAgreed = 4096

// recheckPurge is how many rounds a node goes without exchanging orders
// with a replica it last agreed with, while its own orders have not
// changed. A replica that missed an order is reached sooner: the nodes
// that took it hold a new digest and exchange with it in their next round,
// and a restarted node, which remembers no agreement, exchanges in its
// first.
const recheckPurge = 10

// purgeAgreement is the last exchange of orders with one replica.
type purgeAgreement struct {
	digest string // the digest both held
	round  int64  // the round it was reached in
}

// purgeRound exchanges orders with the replicas of the ranges this round
// syncs, before any file moves, unless this node agreed with a replica on
// its current orders fewer than recheckPurge rounds ago.
func (r *Replicator) purgeRound(ctx context.Context, vs []ring.VnodeStatus) {
	if r.cfg.Purge == nil {
		return
	}
	digest := r.cfg.Purge.Digest()
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
			if ok && a.digest == digest && round-a.round < recheckPurge {
				continue
			}
			agreed, err := r.cfg.Purge.Exchange(ctx, c)
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
				if len(r.purgeAgreed) >= maxPurgeAgreed {
					r.purgeAgreed = map[string]purgeAgreement{}
				}
				r.purgeAgreed[c.Peer] = purgeAgreement{digest: agreed, round: round}
			}
			r.purgeMu.Unlock()
		}
	}
}
