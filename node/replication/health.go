package replication

import (
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Health tells how far this node's own ranges are from k
// copies, as its last replication round found them.
type Health struct {
	// Ranges is the number of local ranges the round checked; Behind
	// those not in sync with all their k-1 replicas.
	Ranges int `json:"ranges"`
	Behind int `json:"behind"`
	// BelowK counts versions of this node's ranges that lack a copy on
	// some replica: per range, the most any one replica lacks (what this
	// node holds less what the replica holds), or every version of the
	// range when it has fewer than k-1 replicas or one did not answer.
	// A lower bound while replicas hold versions this node lacks.
	BelowK int64 `json:"below_k"`
	// LagSec is the replication lag: the longest time, in seconds, since
	// a range that is behind was last found in sync with all its
	// replicas (or first checked). 0 when every range is in sync.
	LagSec float64 `json:"lag_sec"`
	// LastRound is when the last round ended; zero before the first.
	LastRound time.Time `json:"last_round"`
}

// pairCheck is what syncing one range with one replica found.
type pairCheck struct {
	inSync  bool  // equal sums at once
	lacking int64 // versions the replica lacks; -1: unknown
}

// rangeCheck is what a round found for one local range.
type rangeCheck struct {
	replicas, want int
	inSync         bool  // every pair in sync, and enough replicas
	unknown        bool  // a replica's count is unknown
	belowK         int64 // versions lacking a copy
}

func (c *rangeCheck) add(p pairCheck) {
	if !p.inSync {
		c.inSync = false
	}
	if p.lacking < 0 {
		c.unknown = true
	}
	c.belowK = max(c.belowK, p.lacking)
}

// rangeHealth keeps, per local virtual server, the last round's check and
// when its range was last in sync. Guarded by Replicator.mu.
type rangeHealth struct {
	last      map[id.ID]rangeCheck
	syncedAt  map[id.ID]time.Time // last round that found the range in sync, or its first check
	lastRound time.Time
}

// update records a round's checks at now; ranges no longer local are
// forgotten.
func (h *rangeHealth) update(checks map[id.ID]rangeCheck, now time.Time) {
	synced := make(map[id.ID]time.Time, len(checks))
	for v, c := range checks {
		t, ok := h.syncedAt[v]
		if !ok || (c.inSync && c.replicas >= c.want) {
			t = now
		}
		synced[v] = t
	}
	h.last, h.syncedAt, h.lastRound = checks, synced, now
}

// snapshot summarizes the health at now.
func (h *rangeHealth) snapshot(now time.Time) Health {
	out := Health{Ranges: len(h.last), LastRound: h.lastRound}
	for v, c := range h.last {
		if c.inSync && c.replicas >= c.want {
			continue
		}
		out.Behind++
		out.BelowK += c.belowK
		out.LagSec = max(out.LagSec, now.Sub(h.syncedAt[v]).Seconds())
	}
	return out
}
