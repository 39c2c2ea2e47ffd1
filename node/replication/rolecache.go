package replication

import (
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// roleTTL is how long a replica trusts an owner's role it checked
// (pullRole) before it asks the ring again. An owner offers what it
// stores every PushDelay, and each check is a ring lookup and a walk of
// successor lists (several streams), so without the cache the check
// costs more than the offer. Within roleTTL of a change of the ring a
// replica may take one more offer from a node that just lost the range:
// its records are verified as every record is (Import: digests, name,
// the fetcher's signature), so what the cache can let in is a copy this
// node would also have pulled a moment before; nothing unverified.
const roleTTL = 5 * time.Second

// roleCacheMax bounds the checks remembered; past it they are forgotten
// all at once (a ring has a few ranges per member).
const roleCacheMax = 4096

// roleKey is a checked role: node from owns (a, from.ID] and this node
// replicates it.
type roleKey struct {
	a    id.ID
	from id.ID
	c    ring.Contact
}

// roleCache holds the role checks that passed, with when they expire.
// Refusals are never cached: every refused request is checked (and
// counted) again.
type roleCache struct {
	mu  sync.Mutex
	m   map[roleKey]time.Time
	now func() time.Time // nil: time.Now (tests move it)
}

// clock returns the cache's time.
func (c *roleCache) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// valid reports whether k passed a check less than roleTTL before now.
func (c *roleCache) valid(k roleKey, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.m[k]
	if ok && !now.Before(exp) {
		delete(c.m, k)
		return false
	}
	return ok
}

// add remembers that k passed a check at now.
func (c *roleCache) add(k roleKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= roleCacheMax {
		c.m = make(map[roleKey]time.Time)
	}
	c.m[k] = now.Add(roleTTL)
}
