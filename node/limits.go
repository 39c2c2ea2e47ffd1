package node

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/herod-archive/herod/node/politeness"
	"github.com/herod-archive/herod/ring/p2p"
)

// Streams each herod protocol may hold open at once, all peers together,
// enforced by libp2p's resource manager (rcmgr): a stream over the limit
// is reset before its handler runs. Every handler also bounds its own work
// per request (frame sizes, MaxEntries, link batches), so these limits
// bound a flood's memory and CPU as a whole: at most the product of the
// two. Per peer, rcmgr's default per-protocol limit applies on top
// (on the 2-core, 23 GiB test machine: 75 inbound and 151 outbound
// streams per peer and protocol; docs/ring.md states both).
var protocolLimits = map[protocol.ID]struct{ in, out int }{
	p2p.Protocol:              {in: 512, out: 512}, // ring RPCs: small, answered from memory
	replicateProtocol:         {in: 64, out: 64},   // each may read a version file (≤ 64 MiB reply)
	linksProtocol:             {in: 128, out: 128}, // each batch ≤ 8 MiB compressed, 500,000 URLs
	archiveProtocol:           {in: 128, out: 128}, // gateway fetches of versions
	politeness.BudgetProtocol: {in: 256, out: 256}, // lease RPCs: small frames
	politeness.RobotsProtocol: {in: 64, out: 64},   // may fetch a robots.txt (≤ 500 KiB)
	queryProtocol:             {in: 64, out: 64},   // list/export; 32 served at once (query.MaxServing)
	claimProtocol:             {in: 256, out: 256}, // one small frame each way (claim.go)
	handoverProtocol:          {in: 16, out: 16},   // a leaving node's fetched keys, ≤ 4 MiB
	purgeProtocol:             {in: 16, out: 16},   // a new order runs a purge (a scan of the archive) before the reply
	summaryProtocol:           {in: 64, out: 64},   // /ring summaries: small JSON
}

// limitProtocols sets protocolLimits on h's resource manager, keeping the
// memory limit it had.
func limitProtocols(h host.Host) error {
	rm := h.Network().ResourceManager()
	for p, l := range protocolLimits {
		err := rm.ViewProtocol(p, func(s network.ProtocolScope) error {
			sl, ok := s.(rcmgr.ResourceScopeLimiter)
			if !ok {
				return fmt.Errorf("resource manager %T cannot set limits", rm)
			}
			sl.SetLimit(&rcmgr.BaseLimit{
				StreamsInbound:  l.in,
				StreamsOutbound: l.out,
				Streams:         l.in + l.out,
				Memory:          sl.Limit().GetMemoryLimit(),
			})
			return nil
		})
		if err != nil {
			return fmt.Errorf("node: limit protocol %s: %w", p, err)
		}
	}
	return nil
}
