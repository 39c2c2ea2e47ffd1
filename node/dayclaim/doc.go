// Package dayclaim carries the day's claims (package ring/claim) between
// nodes, so that each URL is fetched once a day while ranges move:
//
//   - /herod/claim/1.0.0 (ClaimProtocol): a node whose virtual server
//     took a range today claims each URL from the former owner before
//     fetching it (Transport, the claim.Transport over libp2p streams;
//     Service.ServeClaim answers);
//   - /herod/handover/1.0.0 (HandoverProtocol): a node that leaves, or a
//     virtual server that moves, hands the keys it fetched today in its
//     range to the range's heir (Service.HandOver, HandOverRange;
//     Service.ServeHandover records them).
//
// TakeOver queues, when a range grows in the middle of a day (a
// predecessor died or left), the known URLs of the keys it gained: ring
// events wake it, and it compares the ranges it sees with the last ones,
// so a dropped event loses nothing; Idle is false until they are queued.
//
// Relocator is the crawler's forwarder with the fetch-time ownership
// check (crawl.Relocator): a URL whose range moved to another node since
// it was queued, or that a claim made another node's today, is passed on
// or dropped instead of fetched.
//
// The decisions (who fetches, what a claim answers, which handovers to
// accept) are ring/claim's; the node supplies the streams, the trust gate
// and the crawler (node/claim.go).
//
// Invariants: both handlers are registered through the node's kit
// (ClaimSpec, HandoverSpec: members only), and a request outside the
// member's role is refused, counted and logged (kit.Request.Refuse); a
// claim frame is at most 16 KiB, a handover at most 4 MiB, and every
// exchange ends within 10 s.
//
// Concurrency: a Service, a TakeOver and a Relocator are safe for concurrent use once
// their fields are set; TakeOver.Run runs in one goroutine.
package dayclaim
