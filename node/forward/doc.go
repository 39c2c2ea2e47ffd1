// Package forward ships extracted links to the nodes that own them, the
// thesis's ring forwarding: a Forwarder buffers links, sorts them by key,
// looks up the owner of the first, and each recipient answers with its
// successors (Batch.Want), so a walk costs one lookup however many links
// and owners it serves (walk.go). In replica mode (Config.Replicas > 1)
// what an owner acknowledged is handed to its next Replicas-1 distinct
// real nodes too. A durable Outbox keeps every link until its owner
// acknowledges it, so a node killed mid-walk forwards them again when it
// restarts. A walk starts once the buffer holds Config.PerVnode links per
// virtual server in the ring, whose number SizeEstimate estimates from the
// node's successor lists (size.go).
//
// Links is a node's side of the links protocol (Protocol): one hop of a
// walk. It sends a forwarder's batches (Deliver, the forwarder's
// Config.Deliver) and receives other nodes' (Serve, Receive): it
// re-checks each URL, queues at the crawler those this node owns (or
// holds as a replica) and passes the rest on through the forwarder,
// straight to a closer owner when its ring view knows one. With Known set
// a batch carries known URLs that no version carries, sent to the
// holders of their range to be remembered, not crawled (ShareKnown,
// the forwarder's Config.ShareKnown). With Reforward set a request
// announces a take-over: a node whose virtual server took over a range
// tells every real node (AnnounceTakeOver, a walk of successor lists),
// and each re-forwards once the links of its pages into the range
// (reforward.go; RunReforward, the Crawler's Outlinker), so that a URL
// linked only from a page that never changes reaches its new owner. The wire format is Header, Reply,
// EncodeLinks and DecodeLinks. The node supplies the streams, the trust
// gate, the ring and the crawler (node/links.go).
//
// Invariants: a link is never dropped while in a forwarder — it leaves
// the buffer and the outbox only when its owner acknowledges it, and a
// failed delivery puts it back for the next walk (a link sent straight to
// a closer owner comes back without that hint); a link acknowledged by
// its owner is not sent again the same crawl day (Config.Day) unless it
// was passed on by a non-owner (hops > 0); DecodeLinks refuses more than
// 500,000 URLs, or more bytes decompressed than the URLs the header counts
// may hold (64 MiB at most), and allocates only what arrived; Links
// serves through the node's kit (Links.Spec: members only, 16 requests at
// once), takes replica links only for a range it replicates and known
// URLs only URL by URL for ranges it holds, at most KnownPerDay a sender
// (refusals wrap ErrRole), and queues a link passed on MaxHops times
// rather than lose it.
//
// Concurrency: a Forwarder, a SizeEstimate and a Links (once its fields
// are set) are safe for concurrent use; Run walks one walk at a time. An Outbox is used by
// one Forwarder.
package forward
