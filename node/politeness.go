package node

import (
	"context"
	"errors"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/node/politeness"
)

// PolitenessStats is a snapshot of a node's part in ring-wide politeness.
type PolitenessStats = politeness.Stats

// errNotCrawling answers peers that ask for a robots.txt record before
// the node crawls.
var errNotCrawling = errors.New("node: not started")

// setupPoliteness makes the crawler's robots.txt and per-host pacing hold
// for the ring as a whole (package politeness). A Budget or Robots already
// set in cc is kept. Redirect targets travel with their depth
// (redirects.go), so that the crawler's bound on redirect chains holds
// across nodes. The protocol handlers are registered here; they read
// n.crawler only once the node has started.
func (n *Node) setupPoliteness(cc *crawl.Config) {
	p := politeness.New(politeness.Config{
		Rate:   cc.HostRate,
		Self:   n.self,
		Ring:   n.ring,
		Peers:  n.pool, // leases and robots records over kept streams (kit.Pool)
		Local:  n.robotsRecord,
		Logger: n.log.With("sub", "politeness"),
	})
	if cc.Budget == nil {
		cc.Budget = p
	}
	if cc.Robots == nil {
		cc.Robots = p
	}
	if cc.Redirects == nil {
		cc.Redirects = redirectSender{n}
	}
	// Record the effective hooks so PolitenessStats can find them.
	n.cfg.Crawl.Budget, n.cfg.Crawl.Robots = cc.Budget, cc.Robots
	n.kit.MustHandle(p.BudgetSpec())
	n.kit.MustHandle(p.RobotsSpec())
	n.kit.MustHandle(rawSpec(redirectProtocol, n.handleRedirect, maxRedirectRequest, redirectTimeout, 64))
}

// robotsRecord is this node's own record of origin's robots.txt, from its
// crawler's cache.
func (n *Node) robotsRecord(ctx context.Context, origin string) (crawl.RobotsRecord, error) {
	if !n.started.Load() || n.crawler == nil {
		return crawl.RobotsRecord{}, errNotCrawling
	}
	return n.crawler.RobotsRecord(ctx, origin)
}

// PolitenessStats returns the node's politeness counters. They are zero
// when the node was configured with its own crawl Budget and Robots.
func (n *Node) PolitenessStats() PolitenessStats {
	p, ok := n.cfg.Crawl.Robots.(*politeness.Service)
	if !ok {
		if p, ok = n.cfg.Crawl.Budget.(*politeness.Service); !ok {
			return PolitenessStats{}
		}
	}
	return p.Stats()
}
