// Package member is a node's trust boundary: which libp2p peers are
// members of its ring (Gate.Member). Any peer can open a stream to a
// node; every protocol handler of the node passes the stream through one
// Gate first (Gate.Gate, Gate.Admit), which refuses a peer that is this
// node itself, whose captures were purged, or none of whose virtual
// servers passes the ring's admission check and is in the ring (see
// gate.go for the rule). A handler that finds a member's request outside
// the role the ring gives it reports it to Gate.RefuseRole
// (docs/trust.md, "Who may ask what").
//
// Invariants: answers are cached per peer, a member for a minute and a
// refusal for ten seconds, at most 4096 of them (a full cache is
// cleared: a flood of identities costs checks, not memory); a check cut
// short by its context is not cached against the peer; every refusal is
// counted (Stats).
//
// Concurrency: a Gate is safe for concurrent use once its fields are
// set.
package member
