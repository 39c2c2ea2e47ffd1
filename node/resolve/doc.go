// Package resolve answers any URL from its holders, so that any node's
// gateway serves any URL: Service.Versions and Service.Get (the
// gateway.Archive). Versions merges the versions this node holds with
// those every other holder lists (the owner and its replicas, up to K
// real nodes); Get weighs this node's own version for the time asked
// against the first verified one of the owner, then the replicas. Other
// nodes are asked over /herod/archive/1.1.0 (Protocol), whose server
// side is Service.Handle: "versions of u", each with its fetcher's
// signature, and "the capture of u at t" as its signed WARC record, both
// from the local store. Ring-wide queries (CDX, export) are package
// query's; the node wires a Service to its host, ring, store and trust
// gate (node/resolve.go).
//
// Invariants: nothing a peer sends is served unverified. A listed version
// is shown only if its fetcher's signature of its URL, time and payload
// digest verifies and its fetcher is not purged
// (archive.Store.VerifySigned); a capture only once its record passed
// the check replication's imports pass (archive.Store.VerifyRecord:
// gzip and WARC framing, digests, signature by the fetcher's key, purge
// book) and proved to be the version of the URL the holder named; what
// fails is counted (Stats.Rejected) and the next holder asked. A purged
// peer is never asked. No holder can hide a version this node or another
// holder reached lists. Handle answers verified ring members only
// (Service.Gate); a request frame is at most 64 KiB, a reply header 4 MiB
// and a record 64 MiB, and every exchange ends within 30 s; an
// unreachable holder is an error only when no other holder answers.
//
// Concurrency: a Service is safe for concurrent use once its fields are
// set.
package resolve
