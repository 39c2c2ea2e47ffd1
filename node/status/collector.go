package status

import "github.com/prometheus/client_golang/prometheus"

// Collector exposes the archive, forwarding, replication, politeness
// and link counters of a node's Status as Prometheus metrics (herod_*),
// read once per scrape, with its stream bytes by protocol, how the ring
// reaches it and its bandwidth caps. The crawler's own collector exports
// the herod_crawl_* metrics.
type Collector struct {
	// Status returns the node's state; Collect calls it once.
	Status func() Status
	// Caps returns the node's bandwidth caps, in the order they are
	// exported.
	Caps func() []Cap
}

// Cap is one configured bandwidth cap: its direction ("down", "up"), what
// it applies to ("all", "replication") and its bytes per second (0: none).
type Cap struct {
	Dir, Use string
	Rate     int64
}

var _ prometheus.Collector = (*Collector)(nil)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("herod_"+name, help, labels, nil)
}

// metric is one herod_* metric and how to read it from a Status.
type metric struct {
	d    *prometheus.Desc
	kind prometheus.ValueType
	get  func(st *Status) float64
}

func gauge(name, help string, get func(st *Status) float64) metric {
	return metric{desc(name, help), prometheus.GaugeValue, get}
}

func counter(name, help string, get func(st *Status) float64) metric {
	return metric{desc(name, help), prometheus.CounterValue, get}
}

var (
	nodeMetrics = []metric{
		// archive
		gauge("archive_versions", "Versions stored.", func(st *Status) float64 { return float64(st.Archive.Versions) }),
		gauge("search_terms", "Distinct terms whose postings this node holds.", func(st *Status) float64 { return float64(st.Search.Terms) }),
		gauge("search_postings", "Postings this node holds.", func(st *Status) float64 { return float64(st.Search.Postings) }),
		gauge("search_backlog", "URLs waiting to be indexed.", func(st *Status) float64 { return float64(st.Search.Backlog) }),
		counter("search_indexed_total", "Versions indexed since the node started.", func(st *Status) float64 { return float64(st.Search.Indexed) }),
		counter("search_sent_bytes_total", "Posting bytes sent to the terms' holders on other nodes.", func(st *Status) float64 { return float64(st.Search.SentBytes) }),
		counter("search_synced_total", "Postings pulled from other holders of their terms by sync and stored.", func(st *Status) float64 { return float64(st.Search.Sync.Pulled) }),
		counter("search_sync_refused_total", "Postings other holders sent by sync that were refused (malformed, outside the range asked, index full).", func(st *Status) float64 { return float64(st.Search.Sync.Refused) }),
		gauge("archive_bytes", "Bytes of the records of stored versions.", func(st *Status) float64 { return float64(st.Archive.Bytes) }),
		gauge("archive_segments", "Segment files of the archive.", func(st *Status) float64 { return float64(st.Archive.Segments) }),
		counter("archive_commits_total", "Index groups the archive committed, each with its syncs, shared by the writes that joined it.", func(st *Status) float64 { return float64(st.Archive.Commits) }),
		gauge("archive_quota_bytes", "The archive's quota (0: none).", func(st *Status) float64 { return float64(st.Archive.Quota) }),
		counter("archive_share_refused_total", "Versions refused because their signer's versions took its share of the quota.", func(st *Status) float64 { return float64(st.Archive.ShareRefused) }),
		counter("archive_range_share_refused_total", "Versions refused because the versions of their replicated range took its share of the quota.", func(st *Status) float64 { return float64(st.Archive.RangeRefused) }),
		gauge("archive_at_quota", "1 while the archive is so close to its quota that it would refuse most versions: crawl and replication paused.", func(st *Status) float64 { return b2f(st.Archive.AtQuota) }),
		gauge("archive_disk_full", "1 while the archive's file system is at its reserve: crawl and replication paused.", func(st *Status) float64 { return b2f(st.Archive.DiskFull) }),
		gauge("crawl_paused", "1 while the crawl is paused: disk full or quota reached (replication pauses too), or search indexing behind; status crawl.paused says which.", func(st *Status) float64 { return b2f(st.Crawl.Paused != "") }),
		counter("replication_skipped_total", "Records not downloaded because the archive refused them before for their signer's share.", func(st *Status) float64 {
			return float64(st.Replication.Syncs.Skipped + st.Replication.Push.Received.Skipped)
		}),
		// forwarding and links
		gauge("forward_pending", "Links waiting for delivery to their owners.", func(st *Status) float64 { return float64(st.Forward.Pending) }),
		counter("forward_sent_total", "Links delivered to other nodes.", func(st *Status) float64 { return float64(st.Forward.Sent) }),
		counter("forward_failures_total", "Link deliveries that failed and were retried.", func(st *Status) float64 { return float64(st.Forward.Failures) }),
		counter("links_received_total", "Links received from other nodes.", func(st *Status) float64 { return float64(st.Links.Received) }),
		counter("links_over_hops_total", "Links queued here after too many hops, though another node owns them.", func(st *Status) float64 { return float64(st.Links.OverHops) }),
		counter("reforward_spans_total", "Take-over spans whose links this node re-forwarded.", func(st *Status) float64 { return float64(st.Links.ReforwardSpans) }),
		counter("reforward_dropped_total", "Take-over spans dropped: queue full, or past their announcer's daily cap.", func(st *Status) float64 { return float64(st.Links.ReforwardDropped) }),
		counter("trust_reforward_refused_total", "Take-over spans refused: the ring never gave their announcer the span.", func(st *Status) float64 { return float64(st.Links.ReforwardRefused) }),
		counter("trust_pass_on_refused_total", "Link batches refused: the links other nodes sent to be passed on filled their bound.", func(st *Status) float64 { return float64(st.Links.PassOnRefused) }),
		counter("trust_over_hop_dropped_total", "Links at the hop limit dropped past their sender's daily allowance.", func(st *Status) float64 { return float64(st.Links.OverHopDropped) }),
		counter("bad_frames_total", "Malformed or oversized messages from peers.", func(st *Status) float64 { return float64(st.Links.BadFrames) }),
		counter("taken_over_total", "URLs queued because this node's ranges grew in the middle of a day.", func(st *Status) float64 { return float64(st.TakenOver) }),
		counter("session_exchanges_opened_total", "Exchanges of session protocols (claims, link batches, leases, robots records) on a stream opened for them.", func(st *Status) float64 { return float64(st.Sessions.Opened) }),
		counter("session_exchanges_reused_total", "Exchanges of session protocols on a stream kept from an earlier exchange.", func(st *Status) float64 { return float64(st.Sessions.Reused) }),
		counter("session_exchanges_retried_total", "Exchanges of session protocols sent again on a new stream after a kept one failed.", func(st *Status) float64 { return float64(st.Sessions.Retried) }),
		// replication
		gauge("replication_below_k", "Versions of this node's ranges lacking a copy on one of their k-1 replicas at the last round (a lower bound).", func(st *Status) float64 { return float64(st.Replication.Health.BelowK) }),
		gauge("replication_lag_seconds", "Longest time since a range now behind was last in sync with all its replicas; 0 when all are.", func(st *Status) float64 { return st.Replication.Health.LagSec }),
		gauge("replication_ranges", "Local ranges checked by the last replication round.", func(st *Status) float64 { return float64(st.Replication.Health.Ranges) }),
		gauge("replication_ranges_behind", "Local ranges not in sync with all their replicas at the last round.", func(st *Status) float64 { return float64(st.Replication.Health.Behind) }),
		counter("replication_rounds_total", "Replication rounds run.", func(st *Status) float64 { return float64(st.Replication.Rounds) }),
		counter("replication_pulled_total", "Version files pulled from other nodes.", func(st *Status) float64 { return float64(st.Replication.Syncs.Pulled) }),
		counter("replication_pulled_bytes_total", "Bytes of version files pulled from other nodes.", func(st *Status) float64 { return float64(st.Replication.Syncs.PulledBytes) }),
		counter("replication_rejected_total", "Version files refused: failed verification or outside the range.", func(st *Status) float64 { return float64(st.Replication.Syncs.Rejected) }),
		counter("replication_errors_total", "Replication pairs or pulls that failed.", func(st *Status) float64 { return float64(st.Replication.Errors) }),
		counter("replication_pull_requests_total", "Pull requests accepted from owners.", func(st *Status) float64 { return float64(st.Replication.PullRequests) }),
		gauge("replication_handoff_held", "Handed-off records held, waiting for this node's own fetch to confirm their payload.", func(st *Status) float64 { return float64(st.Replication.HandOff.Held) }),
		counter("replication_handoff_released_total", "Held records this node's own fetch confirmed, stored and pushed.", func(st *Status) float64 { return float64(st.Replication.HandOff.Released) }),
		counter("replication_handoff_guarded_total", "Records rounds pulled from a replica that fetched them while this node owned their URL: held, not imported.", func(st *Status) float64 { return float64(st.Replication.HandOff.Guarded) }),
		counter("replication_handoff_expired_total", "Held records no own fetch confirmed in time, dropped (the page changed, or the capture was made up).", func(st *Status) float64 { return float64(st.Replication.HandOff.Expired) }),
		counter("replication_handoff_refused_total", "Handed-off records refused: the held area was full for their sender or in all.", func(st *Status) float64 { return float64(st.Replication.HandOff.Refused) }),
		// politeness
		counter("politeness_leases_total", "Host fetch-slot lease requests (local or remote).", func(st *Status) float64 { return float64(st.Politeness.Leases) }),
		counter("politeness_lease_failures_total", "Lease requests that could not reach the host's owner.", func(st *Status) float64 { return float64(st.Politeness.Failures) }),
		counter("politeness_lease_timeouts_total", "Lease failures where the owner did not answer within the lease timeout.", func(st *Status) float64 { return float64(st.Politeness.Timeouts) }),
		counter("politeness_slots_expired_total", "Leased slots that expired unused.", func(st *Status) float64 { return float64(st.Politeness.Expired) }),
		counter("politeness_fallback_waits_total", "Fetches paced by the equal-share fallback because the owner was unreachable.", func(st *Status) float64 { return float64(st.Politeness.FallbackWaits) }),
		counter("politeness_leases_served_total", "Lease requests answered for other nodes.", func(st *Status) float64 { return float64(st.Politeness.LeasesServed) }),
		counter("politeness_robots_asked_total", "robots.txt records asked of other nodes.", func(st *Status) float64 { return float64(st.Politeness.RobotsAsked) }),
		counter("politeness_robots_fallback_total", "robots.txt files fetched locally because their owner failed.", func(st *Status) float64 { return float64(st.Politeness.RobotsFallback) }),
		counter("politeness_robots_unconfirmed_total", "robots.txt records of owners that no second holder confirmed, fetched directly instead.", func(st *Status) float64 { return float64(st.Politeness.RobotsUnconfirmed) }),
		counter("politeness_robots_disagree_total", "robots.txt records on which the owner and the second holder disagreed.", func(st *Status) float64 { return float64(st.Politeness.RobotsDisagree) }),
		gauge("politeness_scheduled_hosts", "Host schedules this node keeps as their owner.", func(st *Status) float64 { return float64(st.Politeness.ScheduledHosts) }),
		// ring and trust
		gauge("ring_vnodes", "Virtual servers this node runs.", func(st *Status) float64 { return float64(len(st.Ring.Vnodes)) }),
		gauge("ring_suspects", "Peers this node suspects of having failed.", func(st *Status) float64 { return float64(len(st.Ring.Suspects)) }),
		counter("trust_refused_total", "Streams refused from peers that are no verified ring member.", func(st *Status) float64 { return float64(st.Trust.NotMember) }),
		counter("trust_unverified_reads_total", "Versions and captures other holders sent for the gateway that failed verification.", func(st *Status) float64 { return float64(st.Trust.UnverifiedReads) }),
		counter("trust_unverified_listings_total", "Rows other members listed for a ring-wide CDX query or listing that failed verification.", func(st *Status) float64 { return float64(st.Trust.UnverifiedListings) }),
		counter("trust_not_held_rows_total", "Rows and export records other members sent for a ring-wide query of URLs they do not hold.", func(st *Status) float64 { return float64(st.Trust.NotHeldRows) }),
		counter("trust_excluded_pages_total", "Ring-wide CDX pages of members most of whose rows failed: their frontier did not cut the page.", func(st *Status) float64 { return float64(st.Trust.ExcludedPages) }),
		counter("trust_unverified_links_total", "Link-index records not listed: their source capture does not carry them.", func(st *Status) float64 { return float64(st.Trust.UnverifiedLinks) }),
		// the gateway's load
		counter("gateway_requests_total", "HTTP requests the gateway answered.", func(st *Status) float64 { return float64(st.Load.Requests) }),
		gauge("gateway_in_flight", "Gateway requests being handled now.", func(st *Status) float64 { return float64(st.Load.InFlight) }),
		gauge("gateway_memory_held_bytes", "Bytes of reply bodies charged to the gateway's memory budget now.", func(st *Status) float64 { return float64(st.Load.MemoryHeld) }),
		counter("gateway_busy_total", "Gateway requests refused with 503 for load (in flight, memory, export slots).", func(st *Status) float64 { return float64(st.Load.Busy) }),
		counter("gateway_limited_total", "Gateway requests refused with 429: past their client's request rate (--serve-rate).", func(st *Status) float64 { return float64(st.Load.Limited) }),
		counter("gateway_paced_seconds_total", "Time gateway export and CDX writers waited for their client's byte rate (--export-rate).", func(st *Status) float64 { return st.Load.PacedSeconds }),
		gauge("gateway_clients", "Clients whose gateway rate limits are remembered now.", func(st *Status) float64 { return float64(st.Load.Clients) }),
		counter("gateway_stalled_total", "Gateway replies dropped because the reader took nothing within the write-progress deadline.", func(st *Status) float64 { return float64(st.Load.Stalled) }),
		counter("gateway_spooled_total", "Gateway reply bodies served from a spool file.", func(st *Status) float64 { return float64(st.Load.Spooled) }),
		counter("gateway_streamed_total", "Gateway reply bodies streamed from the archive's segment files.", func(st *Status) float64 { return float64(st.Load.Streamed) }),
		counter("gateway_archive_errors_total", "Archive calls of the gateway that failed, timeouts included.", func(st *Status) float64 { return float64(st.Load.ArchiveErrors) }),
		counter("trust_unverified_exports_total", "Records other members sent for an export that failed verification.", func(st *Status) float64 { return float64(st.Trust.UnverifiedExports) }),
		// access rules and purge orders (docs/access.md)
		gauge("access_rules_local", "Access rules of this node's rules file.", func(st *Status) float64 { return float64(st.Access.Local) }),
		gauge("access_rules_ring", "Ring-wide access rules in force.", func(st *Status) float64 { return float64(st.Access.Ring) }),
		counter("access_hidden_total", "Captures the access rules left out of listings and exports.", func(st *Status) float64 { return float64(st.Access.Hidden) }),
		counter("access_blocked_total", "Requests for a blocked capture, answered 451 or 403.", func(st *Status) float64 { return float64(st.Access.Blocked) }),
		counter("purge_orders_refused_total", "Purge and access orders refused: unsigned, altered, or from an issuer this node does not list.", func(st *Status) float64 { return float64(st.Purge.Refused) }),
	}
	mWire  = desc("wire_bytes_total", "Stream bytes by libp2p protocol and direction (muxer and encryption framing excluded).", "protocol", "dir")
	mReach = desc("reach", "How the ring reaches this node: 1 for the current way (listen, mapped by the router, announced).", "how")
	mCap   = desc("bandwidth_cap_bytes_per_second", "Configured bandwidth caps (0: none).", "dir", "use")
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range nodeMetrics {
		ch <- m.d
	}
	ch <- mWire
	ch <- mReach
	ch <- mCap
	describeMembers(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.Status()
	for _, m := range nodeMetrics {
		ch <- prometheus.MustNewConstMetric(m.d, m.kind, m.get(&st))
	}
	for _, w := range st.Wire {
		ch <- prometheus.MustNewConstMetric(mWire, prometheus.CounterValue, float64(w.In), w.Protocol, "in")
		ch <- prometheus.MustNewConstMetric(mWire, prometheus.CounterValue, float64(w.Out), w.Protocol, "out")
	}
	ch <- prometheus.MustNewConstMetric(mReach, prometheus.GaugeValue, 1, st.Reach)
	collectMembers(ch, st.Members)
	for _, b := range c.Caps() {
		ch <- prometheus.MustNewConstMetric(mCap, prometheus.GaugeValue, float64(b.Rate), b.Dir, b.Use)
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
