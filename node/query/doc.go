// Package query answers ring-wide questions about the archive for the
// gateway: the CDX index of a URL, prefix, host or domain (List, Page)
// and the export of its captures as one .warc.gz (Export,
// ExportProgress). The URLs of one host are spread over the whole ring,
// so a Service asks every real node (Members, walking the ring's
// successor lists), this one from its own store, the others over
// /herod/query/1.1.0 (Protocol), and merges their answers in CDX or
// export order, dropping replicas. Serve is the protocol's handler,
// registered through the node's kit (Spec: members only): it answers op
// "list", "page" and "export" from the local store (the export stream
// itself: package export).
//
// The node wires a Service to its host, ring and store (node/query.go):
// Open dials a member.
//
// Invariants: a ring-wide answer is never silently incomplete — if the
// ring cannot be enumerated completely or a member fails, the answer is
// an error wrapping ErrPartial (for an export, after a correct prefix of
// the full stream); every version or row a member returns is checked
// against the request (it matches the query, its key is the SHA-1 of its
// URL, it comes after the resume key, there are no more than asked, it
// comes with its Proof) and a member that breaks the protocol fails the
// answer; a row or record of another member is listed or exported only
// once verified like a read — its fetcher's signature, the purge book,
// its date under the witness rule (verify.go, node/export) — and only
// from a member holding its URL in this node's view of the ring, or
// also listed by one (holders.go), and counted when dropped; a CDX page
// ends at the last key of a member with dropped rows, unless more than
// half of its rows were dropped (then it is excluded from the cut,
// counted: mergePages); a member serves at most cap(Slots) requests at once and
// refuses more with BusyError; every request and reply frame is bounded
// in size and time.
//
// Concurrency: a Service is safe for concurrent use once its fields are
// set; it asks at most 16 members at a time.
package query
