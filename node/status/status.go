package status

import (
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/metrics"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/gwstats"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/node/politeness"
	"github.com/herod-archive/herod/node/purge"
	"github.com/herod-archive/herod/node/replication"
	nodesearch "github.com/herod-archive/herod/node/search"
	"github.com/herod-archive/herod/node/witness"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// AccessStats counts a node's access rules (archive/access) and what its
// gateway kept from readers by them.
type AccessStats struct {
	Local   int   `json:"local"`   // rules of the node's rules file
	Ring    int   `json:"ring"`    // ring-wide rules in force (purge book)
	Hidden  int64 `json:"hidden"`  // captures left out of listings and exports
	Blocked int64 `json:"blocked"` // requests answered 451 or 403
	// RobotsErrors counts failed robots.txt look-ups of --replay-robots
	// (their captures were shown).
	RobotsErrors int64 `json:"robotsErrors,omitempty"`
}

// Status is a node's state as /api/status and `herod status` show it.
type Status struct {
	Peer      string `json:"peer"`
	Addr      string `json:"addr"`
	Multiaddr string `json:"multiaddr"`
	Gateway   string `json:"gateway"`
	// Reach is how the ring reaches this node at Addr: "listen" (its own
	// address), "mapped" (its router's public address, mapped by UPnP
	// IGD or NAT-PMP), "announced" (a port its operator forwarded) or
	// "relayed" (nobody can dial it: Addr is the public IP members observe,
	// and the ring reaches it through Relay).
	Reach string `json:"reach"`
	// Relay is the circuit relay a "relayed" node is reached through.
	Relay string `json:"relay,omitempty"`
	// RingCalls counts the ring calls this node made and how many of them
	// ran over a relayed connection.
	RingCalls   RingCallStats     `json:"ringCalls"`
	Replay      string            `json:"replay"`
	Idle        bool              `json:"idle"`
	Ring        ring.Status       `json:"ring"`
	Crawl       crawl.Stats       `json:"crawl"`
	Archive     archive.Stats     `json:"archive"`
	Forward     forward.Stats     `json:"forward"`
	Links       LinkStats         `json:"links"`
	Politeness  politeness.Stats  `json:"politeness"`
	Replication replication.Stats `json:"replication"`
	Trust       TrustStats        `json:"trust"`
	Claims      claim.Stats       `json:"claims"`
	Purge       purge.Stats       `json:"purge"`
	// Access counts the access rules in force and what they kept from
	// readers (docs/access.md).
	Access AccessStats `json:"access"`
	// Witness counts witness statements fetched and versions left out as
	// unwitnessed (package witness).
	Witness witness.Stats `json:"witness"`
	// TakenOver counts the URLs queued because a range grew in the middle
	// of a day (a predecessor died or left), since the node started.
	TakenOver int64       `json:"takenOver"`
	Wire      []WireStats `json:"wire"`
	// Sessions counts the node's exchanges of session protocols (claims,
	// link batches, leases, robots records) by the stream they used: one
	// opened for them, or one kept from an earlier exchange (kit.Pool).
	Sessions kit.PoolStats `json:"sessions"`
	// Members is the ring's real nodes, up and down, as this node knows
	// them, and k.
	Members Members `json:"members"`
	// Load is the gateway's own counters (gwstats.Stats): requests in
	// flight, refused as busy, stalled readers, spooled bodies.
	Load gwstats.Stats `json:"load"`
	// Search is the node's full-text index health: terms and postings
	// held, URLs waiting to be indexed (package node/search).
	Search nodesearch.Stats `json:"search"`
	// LinkSweep counts the link index's sweeps since the node started
	// (docs/links.md).
	LinkSweep LinkSweepStats `json:"linkSweep"`
}

// LinkSweepStats counts what the link sweeps did since the node started.
type LinkSweepStats struct {
	Full    int64 `json:"full"`    // sweeps of every source
	Partial int64 `json:"partial"` // sweeps of the marked sources and a slice of the slow pass
	Read    int64 `json:"read"`    // sources read (state, versions, new captures)
	Skipped int64 `json:"skipped"` // sources walked and skipped: newest version already delivered
	Sent    int64 `json:"sent"`    // records delivered to their targets' holders
	Failed  int64 `json:"failed"`  // sources whose records were not delivered (read again)
}

// WireStats counts the stream bytes this node sent and received under one
// libp2p protocol ("" is protocol negotiation). Muxer and encryption framing
// are not included.
type WireStats struct {
	Protocol string `json:"protocol"`
	In       int64  `json:"in"`
	Out      int64  `json:"out"`
}

// Wire returns the stream bytes bw counted, by protocol, sorted by
// protocol.
func Wire(bw metrics.Reporter) []WireStats {
	var out []WireStats
	for p, st := range bw.GetBandwidthByProtocol() {
		out = append(out, WireStats{Protocol: string(p), In: st.TotalIn, Out: st.TotalOut})
	}
	slices.SortFunc(out, func(a, b WireStats) int { return strings.Compare(a.Protocol, b.Protocol) })
	return out
}

// RingCallStats counts ring calls (lookup steps, stabilization, pings).
type RingCallStats struct {
	Calls   uint64 `json:"calls"`
	Relayed uint64 `json:"relayed"`
}

// LinkStats counts links other nodes sent to this one.
type LinkStats struct {
	Received  int64 `json:"received"`
	BadLinks  int64 `json:"badLinks"`  // not canonical: dropped
	BadFrames int64 `json:"badFrames"` // malformed or oversized messages
	// OverHops counts links queued here, though this node does not own
	// them, because they had been passed on forward.MaxHops times: the nodes'
	// views of the ring disagreed, and the owner may fetch them too.
	OverHops int64 `json:"overHops"`
	// KnownShared and KnownReceived count known URLs that no version
	// carries, sent to their ranges' holders and remembered from others
	// (forward.Links.ShareKnown), since the node started.
	KnownShared   int64 `json:"knownShared"`
	KnownReceived int64 `json:"knownReceived"`
	// Reforward counts take-over spans: re-forwarded here, dropped (queue
	// full, or past an announcer's daily cap) and refused (the ring never
	// gave their announcer the span) (forward.ReforwardStats).
	ReforwardSpans   int64 `json:"reforwardSpans"`
	ReforwardDropped int64 `json:"reforwardDropped"`
	ReforwardRefused int64 `json:"reforwardRefused"`
	// PassOnRefused counts batches refused because forward.MaxPassingOn
	// links other nodes sent waited here to be passed on; OverHopDropped
	// links at MaxHops dropped past their sender's
	// forward.MaxOverHopsPerDay (docs/trust-bounds.md).
	PassOnRefused  int64 `json:"passOnRefused"`
	OverHopDropped int64 `json:"overHopDropped"`
}

// TrustStats counts requests refused at the trust boundary (package member).
type TrustStats struct {
	// NotMember counts peers refused because they are not verified ring
	// members (each refusal is cached for a few seconds; streams refused
	// from the cache are not counted again).
	NotMember int64 `json:"notMember"`
	// Role counts members' requests outside their role: a pull for a
	// range they do not own or this node does not replicate, replica
	// links for a range this node does not replicate.
	Role int64 `json:"role"`
	// UnverifiedReads counts the versions and capture records other
	// holders sent for the gateway that failed verification (unsigned,
	// forged, signed by a purged peer): none was shown.
	UnverifiedReads int64 `json:"unverifiedReads"`
	// UnverifiedExports counts the records other members sent for a
	// ring-wide export that failed verification: none was exported.
	UnverifiedExports int64 `json:"unverifiedExports"`
	// UnverifiedListings counts the rows other members listed for a
	// ring-wide CDX query or listing that failed verification (unsigned,
	// forged, purged fetcher, future or unwitnessed date): none was
	// listed.
	UnverifiedListings int64 `json:"unverifiedListings"`
	// NotHeldRows counts the rows and export records other members sent
	// for a ring-wide query of URLs they do not hold in this node's view
	// of the ring (docs/trust.md): rows no holder listed too, and export
	// records (a holder's copy is still exported). None was listed.
	NotHeldRows int64 `json:"notHeldRows"`
	// ExcludedPages counts the ring-wide CDX pages of members more than
	// half of whose rows failed verification or were not held: their
	// frontier did not cut the page (docs/trust-replicas.md).
	ExcludedPages int64 `json:"excludedPages"`
	// UnverifiedLinks counts link-index records the gateway did not list
	// because their source capture, read as readers are shown it, does
	// not carry them; UncheckedLinks those whose capture could not be
	// read in time (docs/links.md).
	UnverifiedLinks int64 `json:"unverifiedLinks"`
	UncheckedLinks  int64 `json:"uncheckedLinks"`
}
