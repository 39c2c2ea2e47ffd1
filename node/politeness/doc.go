// Package politeness makes a ring of nodes one polite crawler to every
// site: each host's robots.txt is fetched by one node and shared, and each
// host's request budget is one schedule, kept by one node and leased to
// the others. The node wires a Service in as its crawler's
// crawl.RobotsSource and crawl.HostBudget and registers its two stream
// protocols (RobotsProtocol, BudgetProtocol).
//
// A host must see the ring as one polite crawler, not as N of them. Two
// things are shared, each kept by the node that owns a key on the ring:
//
//   - robots.txt: the node owning the canonical URL origin+"/robots.txt"
//     fetches the file (through its crawler's own cache, RobotsTTL, 24 h by
//     default) and the other nodes ask it over RobotsProtocol. In a stable
//     ring each host's robots.txt is fetched once per RobotsTTL ring-wide.
//     When the owner cannot be reached the asking node fetches the file
//     itself through the same crawler cache, so the fallback costs at most
//     one fetch of a file per node per RobotsTTL (a failed fetch, 5xx or
//     unreachable, is retried after RobotsTTL/24 as the crawler does for
//     every file). RFC 9309 would let us treat an unreachable owner like an
//     unreachable site (disallow everything); we fetch instead because the
//     owner being down says nothing about the site, and the per-node cache
//     bounds what that costs the site.
//   - confirmation: an owner's robots.txt record is believed only when
//     its second holder — the first node after the owner on the ring that
//     runs on another real node (Ring.Successors) — answers a record of
//     the same policy (crawl.SameRobots). The second holder answers a
//     RobotsRequest with Second set from its own crawler's cache when, by
//     its own view, it is one of the two real nodes after the owner. On a
//     disagreement, when no second holder answers, or when the asking
//     node is the second holder, the asking node fetches the file itself:
//     the site decides, and while it cannot be reached everything is
//     disallowed. (Letting the more restrictive peer answer win outright
//     would let one member close any site to the ring.) A lying owner
//     thus costs one direct fetch per node per RobotsTTL and changes
//     nothing the crawler obeys. In a stable honest ring each robots.txt
//     is fetched twice per RobotsTTL (owner and second holder).
//   - the per-host request budget: the node owning HostKey(host) =
//     SHA-1("host:" + host) keeps one schedule of request slots for the
//     host: a grid of ticks 1/HostRate apart, or a Crawl-delay apart when
//     longer, each tick granted to one node at most (see slotAllocator).
//     Crawling nodes lease slots in batches over BudgetProtocol (see
//     leaseBudget): a lease asks for up to k slots (k adapts to how many
//     got used, and covers about leaseSpan), spaced at the asking node's
//     own pace so that ticks it could not use go to other nodes, and the
//     owner replies with delays relative to its now. A node sends each
//     request in one of its slots; a slot not used within half an interval
//     expires (nothing is returned to the owner). When the owner cannot be
//     reached a node paces the host with crawl.NewSharedBudget for
//     fallbackFor, using twice its estimate of the ring's size
//     (nodeEstimate), so that nodes in fallback take less than their share.
//
// Whatever slots an owner grants, the crawler then waits for its own
// limiter at HostRate (crawl.CapBudget): an owner that grants every slot
// at once makes a node go no faster than it would crawl the host alone.
//
// Bound: in a stable ring, with every node using the same HostRate r, the
// requests of all nodes to one host in any window of length W number at
// most r·W + 1 + r·(g + D): g is the grace of a slot (half an interval,
// at least minSlotGrace) and D the largest delay between a slot and its
// request reaching the host (the lease is placed after its reply arrives,
// so the round trip only delays; the crawler's dispatch after Wait adds
// to D). Aligned windows of whole intervals hold at most r·W + 1 + r·D.
// node.TestPoliteRing checks r·W + 3 at r = 20/s (D up to 100 ms) on
// eight real nodes.
//
// # Concurrency
//
// A Service is safe for concurrent use; its handlers run on the streams'
// goroutines. The pure parts — the owner's slot allocator (alloc.go) and
// the requester's lease budget (lease.go) — take an injected clock and
// are tested without sockets.
package politeness
