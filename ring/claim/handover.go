package claim

import (
	"fmt"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// A node that leaves gracefully hands, for each of its ranges, the keys
// it fetched that day to the range's heir, which records them as fetched
// by a former owner: the heir takes the range over without fetching them
// again that day.

// MaxHandoverKeys bounds the keys of one Handover.
const MaxHandoverKeys = 90_000

// maxHandoversPerDay bounds the handovers one virtual server makes to
// this node in a day; past it they are refused.
const maxHandoversPerDay = 4

// Handover carries a leaving virtual server's keys fetched on Day.
type Handover struct {
	Day   int64     `json:"day"`
	Vnode ring.Node `json:"vnode"` // the leaving virtual server
	Keys  []id.ID   `json:"keys"`
}

// Fetched returns the keys this node fetched on day within r that it
// holds in memory (Config.FetchSetKeys), at most MaxHandoverKeys. Keys carry their first 8 bytes only (the rest zero),
// which is what the receiving Claims keeps of them.
func (c *Claims) Fetched(r ring.Range, day int64) []id.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	var keys []id.ID
	c.mine.each(func(s short) {
		if k := s.long(); r.Contains(k) && len(keys) < MaxHandoverKeys {
			keys = append(keys, k)
		}
	})
	return keys
}

// HandedOver records the keys of h, sent by the member from, as fetched
// today by a former owner. Only keys the leaving virtual server owned by
// this node's view count: it lies at or after the key, with none of this
// node's virtual servers in between. A virtual server hands over at most
// maxHandoversPerDay times a day (a node that stops, starts and stops
// again), and the day's set holds at most maxHad keys.
func (c *Claims) HandedOver(from ring.Node, h Handover, day int64) error {
	if h.Vnode.Peer != from.Peer || h.Vnode.Addr != from.Addr {
		return fmt.Errorf("%w: handover for %s sent by %s", ErrRole, h.Vnode, from.Contact)
	}
	if err := ring.CheckID(h.Vnode, c.cfg.MaxVirtualServers); err != nil {
		return fmt.Errorf("%w: %w", ErrRole, err)
	}
	if len(h.Keys) > MaxHandoverKeys {
		return fmt.Errorf("%w: handover of %d keys (at most %d)", ErrRole, len(h.Keys), MaxHandoverKeys)
	}
	if h.Day != day {
		return nil
	}
	vs := c.cfg.Ring.Vnodes()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	if c.handed[h.Vnode.ID] >= maxHandoversPerDay {
		return fmt.Errorf("%w: %d handovers of %s today already", ErrRole, maxHandoversPerDay, h.Vnode)
	}
	c.handed[h.Vnode.ID]++
	for _, k := range h.Keys {
		if handedOver(k, h.Vnode.ID, vs) {
			c.markHadLocked(shortOf(k))
		}
	}
	return nil
}

// handedOver reports whether key k was owned by the virtual server v by
// the view of a node running vs: v lies at or after k, and none of vs lies
// in [k, v).
func handedOver(k, v id.ID, vs []ring.Node) bool {
	for _, u := range vs {
		if u.ID == k || (u.ID != v && id.InHalfOpen(u.ID, k, v)) {
			return false
		}
	}
	return true
}
