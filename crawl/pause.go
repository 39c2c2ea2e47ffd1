package crawl

import (
	"context"
	"time"
)

// pauseCheck is how often a paused crawler asks Config.Paused again.
const pauseCheck = time.Second

// waitUnpaused returns at once when Config.Paused reports no reason;
// otherwise it waits, asking again every pauseCheck, until it reports
// none (true) or ctx ends (false). A paused crawler sends no request: a
// page fetched while its archive cannot store it would be fetched again.
func (c *Crawler) waitUnpaused(ctx context.Context) bool {
	if c.cfg.Paused == nil {
		return true
	}
	for {
		reason := c.cfg.Paused()
		c.mu.Lock()
		if reason != c.pausedFor {
			if reason != "" {
				c.log.Warn("crawl paused", "reason", reason)
			} else {
				c.log.Info("crawl resumed", "was", c.pausedFor)
			}
			c.pausedFor = reason
		}
		c.mu.Unlock()
		if reason == "" {
			return true
		}
		t := time.NewTimer(pauseCheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
