// Package ringpage draws the gateway's /ring page (Service.View): this
// node's virtual servers with their routing state, every other virtual
// server they know of, and a summary of every real node among them —
// state, crawl day, versions, replication health — asked over
// /herod/summary/1.0.0 (Protocol), at most 16 at a time, and marked
// "unreachable" when a node does not answer within 3 s or names another
// peer. Service.Serve answers other members' requests for this node's
// summary, which the node computes (node/summary.go).
//
// Invariants: Serve answers verified ring members only (registered
// through the node's kit: Service.Spec); a summary frame is at most
// 16 KiB.
//
// Concurrency: a Service is safe for concurrent use once its fields are
// set.
package ringpage
