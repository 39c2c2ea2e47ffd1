// Package resolve answers any URL from its holders, so that any node's
// gateway serves any URL: Service.Versions and Service.Get (the
// gateway.Archive) ask the URL's owner first, then this node's own store
// (it holds the ranges it replicates), then the owner's successors on
// other real nodes, up to K real nodes in all, and return the first
// answer. Other nodes are asked over /herod/archive/1.0.0 (Protocol),
// whose server side is Service.Handle: "versions of u" and "the capture
// of u at t" from the local store. Ring-wide queries (CDX, export) are
// package query's; the node wires a Service to its host, ring, store and
// trust gate (node/resolve.go).
//
// Invariants: a capture's body is used only once its SHA-1 matches the
// version's digest; Handle answers verified ring members only
// (Service.Gate); a request frame is at most 64 KiB, a reply header
// 4 MiB and a body 64 MiB, and every exchange ends within 30 s; an
// unreachable holder is an error only when no other holder answers.
//
// Concurrency: a Service is safe for concurrent use once its fields are
// set.
package resolve
