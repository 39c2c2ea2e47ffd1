// Package witness makes the dates of captures believable across the ring
// (archive/witness.go has the rule): it answers other holders' requests
// for the witness statements this node holds (Protocol, Service.Handle),
// fetches the statements of versions this node received too late to
// witness them itself — a joiner's old data — from their other holders
// (Service.CatchUp, Service.Run), and judges versions that the gateway
// shows, held here or not (Service.Date), so that the gateway leaves out
// every version whose date no independent holder vouches for (Archive).
//
// # Invariants
//
//   - A statement is stored only after it verifies (archive.AddWitnesses):
//     signed by its peer, a peer other than the fetcher, not refused.
//   - Nothing is deleted: an unwitnessed version stays in the store, hidden
//     from readers, and is shown once a statement dates it.
//   - Every message is bounded: MaxAsk versions a request, the store's
//     eight statements a version, frames by maxRequest and maxReply.
//
// # Concurrency
//
// A Service is safe for concurrent use once its fields are set; Run is
// one goroutine that stops with its context.
package witness
