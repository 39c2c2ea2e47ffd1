package crawl

import (
	"context"
	"fmt"
)

// Requeues reports whether the day's re-queue may queue the known URL u
// again: this node owns it (Config.Owns, when set) and the scope it runs
// with now admits it (DenyHosts, AllowHosts, length, traps; not the
// dynamic rule, which u passed when it became known). The host lists are
// today's, so a node restarted with --deny-host H queues none of H's
// known URLs, and one restarted with --allow-host only those hosts'.
// newDay asks it of every known URL and every deferred one (startDay).
func (c *Crawler) Requeues(u string) bool { return c.takeStored(u) }

// Recheck queues urls to be fetched now, through the queue and each
// host's politeness as any URL, even those already fetched today (they
// are taken out of the day's URL-seen set first; one still queued may be
// fetched twice). A node rechecks the URL of a record another member
// handed it, whose payload only its own fetch may confirm
// (Deps.Fetched). URLs the scope refuses are counted and not queued. A
// URL new to this node becomes known here but is not shared with its
// range's holders (OnKnown): a sender's hand-offs do not spread into the
// ring's known set; once a record is confirmed, its version carries it.
func (c *Crawler) Recheck(ctx context.Context, urls []string) error {
	for _, u := range urls {
		if err := c.q.unsee(u); err != nil {
			return fmt.Errorf("crawl recheck: %w", err)
		}
	}
	_, err := c.addShared(ctx, urls, c.scope.check, 0, false)
	return err
}
