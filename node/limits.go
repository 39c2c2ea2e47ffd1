package node

import (
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/node/importer"
	"github.com/herod-archive/herod/node/p2phost"
	"github.com/herod-archive/herod/node/politeness"
	"github.com/herod-archive/herod/node/render"
	"github.com/herod-archive/herod/node/replication"
	nodesearch "github.com/herod-archive/herod/node/search"
	"github.com/herod-archive/herod/ring/p2p"
)

// Streams each herod protocol may hold open at once, all peers together,
// enforced by libp2p's resource manager (rcmgr): a stream over the limit
// is reset before its handler runs. Every handler also bounds its own work
// per request (frame sizes, MaxEntries, link batches), so these limits
// bound a flood's memory and CPU as a whole: at most the product of the
// two. Per peer, rcmgr's default per-protocol limit applies on top
// (on the 2-core, 23 GiB test machine: 75 inbound and 151 outbound
// streams per peer and protocol; docs/trust.md states both).
var protocolLimits = map[protocol.ID]p2phost.StreamLimit{
	p2p.Protocol:              {In: 512, Out: 512}, // ring RPCs: small, answered from memory
	replicateProtocol:         {In: 64, Out: 64},   // each may read a version file (≤ 64 MiB reply)
	replication.DictProtocol:  {In: 16, Out: 16},   // a zstd dictionary (≤ 256 KiB reply)
	linksProtocol:             {In: 128, Out: 128}, // each batch ≤ 8 MiB compressed, 500,000 URLs
	archiveProtocol:           {In: 128, Out: 128}, // gateway fetches of versions
	politeness.BudgetProtocol: {In: 256, Out: 256}, // lease RPCs: small frames
	politeness.RobotsProtocol: {In: 64, Out: 64},   // may fetch a robots.txt (≤ 500 KiB)
	queryProtocol:             {In: 64, Out: 64},   // list/export; 32 served at once (query.MaxServing)
	claimProtocol:             {In: 256, Out: 256}, // one small frame each way (package dayclaim)
	handoverProtocol:          {In: 16, Out: 16},   // a leaving node's fetched keys, ≤ 4 MiB
	purgeProtocol:             {In: 16, Out: 16},   // a new order runs a purge (a scan of the archive) before the reply
	summaryProtocol:           {In: 64, Out: 64},   // /ring summaries: small JSON
	render.RenderProtocol:     {In: 16, Out: 16},   // a page rendered (≤ 150 s), its records then delivered
	render.DeliverProtocol:    {In: 16, Out: 16},   // a render's records for one owner (≤ 500, one at a time)
	nodesearch.Protocol:       {In: 64, Out: 64},   // postings to their holders (≤ 16 MiB) and posting queries
	nodesearch.SyncProtocol:   {In: 16, Out: 16},   // posting sync: sums and pages of ≤ 4,096 postings between a range's holders
	importer.Protocol:         {In: 16, Out: 16},   // imported records, a request ≤ 8 MiB + one record (node/importer); 4 served at once
}
