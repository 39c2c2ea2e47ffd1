package crawl

import (
	"context"
	"time"

	"github.com/herod-archive/herod/archive"
)

// Write copies (--write-copies): with Config.WriteCopies w above 1, a
// fetch that stores a new version counts as done — its queue entry leaves
// the queue, Idle can turn true — only once w copies of the version exist:
// this node's and w-1 replicas' confirmed imports (Config.Copies; the
// node's push path confirms them). The wait runs in the fetch's own
// goroutine after its connection and request slots are released, so the
// host loops go on sending requests meanwhile; it holds one of the
// 64×Concurrency processing slots. When the copies cannot be made (the
// range has fewer replicas, the offers failed) or do not come within
// WriteCopiesWait, the fetch counts as done anyway and the shortfall is
// counted as KindWriteCopies (herod_crawl_errors_today{kind="write_copies"}
// on /metrics): rounds copy the version later.

// DefaultWriteCopiesWait bounds a fetch's wait for its version's copies
// (Config.WriteCopiesWait).
const DefaultWriteCopiesWait = 30 * time.Second

// KindWriteCopies counts new versions whose WriteCopies copies were not
// confirmed: fewer replicas, failed offers, or WriteCopiesWait passed.
const KindWriteCopies = "write_copies"

// CopyWaiter tells when copies of a version this node stored exist on
// other nodes (node/replication's Replicator implements it).
type CopyWaiter interface {
	// WaitCopies returns nil once n copies of v exist (this node's
	// included), an error once they cannot be made, or ctx's error.
	WaitCopies(ctx context.Context, v archive.Version, n int) error
}

// awaitCopies waits for WriteCopies copies of v, the version of raw just
// stored. It returns false when ctx ended meanwhile: the entry then stays
// queued (abandoned), to be fetched again after a restart.
func (c *Crawler) awaitCopies(ctx context.Context, raw string, v archive.Version) bool {
	if c.cfg.WriteCopies <= 1 || c.cfg.Copies == nil {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteCopiesWait)
	defer cancel()
	start := time.Now()
	err := c.cfg.Copies.WaitCopies(wctx, v, c.cfg.WriteCopies)
	c.mu.Lock()
	c.st.copyWaits++
	c.st.copyWait += time.Since(start)
	c.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		c.count(KindWriteCopies, raw, err)
	}
	return true
}
