package node

import (
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/forward"
)

// linksProtocol carries one hop of a ring walk (package forward).
const linksProtocol = forward.Protocol

// The crawler lists its pages' links for the re-forward after a
// take-over (forward.Links.AnnounceTakeOver).
var _ forward.Outlinker = (*crawl.Crawler)(nil)

// setupLinks builds the node's side of the links protocol; the forwarder
// it sends for, and the crawler it queues at, are set once they exist.
func (n *Node) setupLinks() {
	n.links = &forward.Links{
		Ring:         n.ring,
		Owns:         n.ownsURL,
		Self:         n.self.Peer,
		LinkReplicas: n.cfg.LinkReplicas,
		Replicas:     n.cfg.Replicas,
		Exchange:     n.pool.Exchange,
		Hooks:        wire.Hooks{Logger: n.log},
	}
}

// crawlDay is the forwarder's Day: the crawler's day now (0 before the
// crawler exists, which is only while the node is being built).
func (n *Node) crawlDay() int64 {
	if n.crawler == nil {
		return 0
	}
	return n.crawler.Today()
}
