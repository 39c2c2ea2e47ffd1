// Package node wires one herod volunteer node: a libp2p host, the node's
// virtual servers on the Chord ring, the archive, the crawler and the
// gateway, plus the node-to-node services the layers need:
//
//   - /herod/links/1.0.0 delivers a batch of links to the node that owns
//     them; the reply acknowledges that they are durably queued. With
//     "known" set it hands the holders of a range the known URLs that no
//     version carries, to be remembered, not crawled (package forward,
//     Links; links.go wires it).
//   - /herod/claim/1.0.0 and /herod/handover/1.0.0 keep one fetch per URL
//     and day while ranges move: a node that took a range today claims
//     each URL from the former owner before fetching it, and a node that
//     leaves hands the keys it fetched today to its ranges' heirs
//     (package dayclaim; claim.go wires it).
//   - /herod/archive/1.0.0 answers "versions of u" and "the capture of u at
//     t" for URLs the node stores, so that any gateway answers any URL
//     (package resolve).
//   - /herod/query/1.1.0 lists or exports (as WARC) the versions a node
//     holds for a host, prefix or date range; the gateway's /cdx and
//     /export ask every real node, found by walking the ring, and merge
//     (package query; the export stream: package export).
//   - /herod/robots/1.0.0 and /herod/budget/1.0.0 make politeness hold for
//     the ring: the owner of a host's robots.txt fetches it for everyone,
//     and the owner of the host hands out its request slots.
//   - /herod/purge/1.0.0 exchanges signed purge orders: a peer's captures
//     are removed and refused ring-wide when a purge authority the
//     operator listed (or the peer itself) orders it; orders flood the
//     ring and are exchanged again at the start of each replication round
//     (purge.go, package purge).
//   - /herod/summary/1.0.0 answers a member's /ring page with this node's
//     state, crawl day, versions and replication health (package
//     ringpage; summary.go computes it).
//
// When a range grows in the middle of a day (a predecessor died or left)
// the crawler queues its known URLs at once (dayclaim.TakeOver): ring events
// wake the loop, which compares the ranges it sees with the last ones, so
// a dropped event loses nothing, and Idle is false until they are queued.
// A virtual server that moves for a fairer share first hands the day's
// fetches in its range to the heir (claim.go, ring.Config.Moving). Behind a home
// router the node takes the public address the router maps to it
// (package reach), or, when nothing is mapped, joins through a circuit relay on
// a member; it finds its household's other nodes on the LAN (both: package
// p2phost, which also builds the libp2p host), and leaves and joins again
// when its public address changes.
// Every few minutes the node checks its share of the ring and moves a
// virtual server for a fairer one (rebalance.go, ring.Rebalance).
//
// Each replication round records, per local range, whether its k-1
// replicas were in sync and how many versions one lacked (package
// replication, which runs the rounds);
// /metrics exports that with the node's other counters and libp2p's own
// metrics (package status, which also defines /api/status's Status;
// metrics.go registers it). Download and upload caps throttle the crawler's
// response bodies and the replication streams (throttle.Caps).
//
// Links travel by ring walks: a node's forwarder sorts its buffer by key,
// looks up the owner of the first, and each recipient answers with its
// successors; a durable outbox keeps links until their owner acknowledges
// them (package forward, which also sends and receives the links
// protocol's batches).
//
// Invariants: a link is never dropped while in a node's forwarder — it
// leaves only when its owner acknowledges it; every payload that crosses
// the network is checked against its SHA-1 before use; every inbound
// message is bounded in size and time; every handler of these protocols
// (and of /herod/replicate/1.0.0) acts only for a verified ring member
// (package member's Gate, the one place that decides) and only within
// the role the ring gives it (docs/trust.md, "Who may ask what"); every
// version the node stores is signed with its identity key, and a
// replica's version is imported only with a valid signature by its
// fetcher (archive/provenance.go); the
// crawler never connects to an internal address unless the operator
// allowed its range (crawl.Config.AllowPrivate).
//
// Concurrency: a Node is safe for concurrent use once New returns. Start
// runs the background work under a context that Close cancels; Close
// leaves the ring gracefully, then stops the crawler, the forwarder, the
// gateway and the host, and closes the archive.
//
// The end-to-end tests run several nodes on loopback (LocalRing, in the
// tests); `herod demo` has its own local ring (cmd/herod/localring.go).
package node
