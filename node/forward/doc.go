// Package forward ships extracted links to the nodes that own them, the
// thesis's ring forwarding: a Forwarder buffers links, sorts them by key,
// looks up the owner of the first, and each recipient answers with its
// successors (Batch.Want), so a walk costs one lookup however many links
// and owners it serves (walk.go). In replica mode (Config.Replicas > 1)
// what an owner acknowledged is handed to its next Replicas-1 distinct
// real nodes too. A durable Outbox keeps every link until its owner
// acknowledges it, so a node killed mid-walk forwards them again when it
// restarts.
//
// It also holds the wire format of the links protocol (Protocol, Header,
// Reply, EncodeLinks, DecodeLinks): one hop of a walk. Sending a batch
// over a stream, receiving one (the trust gate, the ownership checks,
// queueing at the crawler) and sharing known URLs are the node's wiring
// (node/links.go, node/known.go); a Forwarder reaches them only through
// Config.Deliver and Config.ShareKnown.
//
// Invariants: a link is never dropped while in a forwarder — it leaves
// the buffer and the outbox only when its owner acknowledges it, and a
// failed delivery puts it back for the next walk (a link sent straight to
// a closer owner comes back without that hint); a link acknowledged by
// its owner is not sent again the same crawl day (Config.Day) unless it
// was passed on by a non-owner (hops > 0); DecodeLinks refuses more than
// 500,000 URLs or 64 MiB decompressed.
//
// Concurrency: a Forwarder is safe for concurrent use; Run walks one walk
// at a time. An Outbox is used by one Forwarder.
package forward
