package node

import (
	"path/filepath"
	"time"

	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/node/ringpage"
)

// summaryProtocol carries one node's summary for another's /ring page
// (package ringpage).
const summaryProtocol = ringpage.Protocol

// setupRingPage builds the gateway's /ring page; its handler is
// registered in Start.
func (n *Node) setupRingPage() {
	n.ringpage = &ringpage.Service{
		Status:  n.ring.Status,
		Summary: n.summary,
		Host:    n.host,
		Open:    n.openStream,
		Logger:  n.log,
		K:       n.cfg.Replicas,
		Path:    filepath.Join(n.cfg.DataDir, ringpage.DownFile),
	}
}

// summary returns this node's own summary.
func (n *Node) summary() ringview.PeerSummary {
	cs, as, rs := n.crawler.Stats(), n.store.Stats(), n.ReplicationStats()
	var errs int64
	for _, e := range cs.ErrorsByKind {
		errs += e
	}
	return ringview.PeerSummary{
		Peer: n.self.Peer, Addr: n.self.Addr, State: "up", Reach: n.reach,
		Day: cs.Day, DayStart: time.Unix(cs.Day*int64(n.cfg.DayLength/time.Second), 0).UTC(), Queued: int64(cs.Queued), Fetched: cs.FetchedToday, Stored: cs.NewVersions, Errors: errs,
		Versions: as.Versions, Bytes: as.Bytes, BelowK: rs.Health.BelowK, LagSec: rs.Health.LagSec,
	}
}
