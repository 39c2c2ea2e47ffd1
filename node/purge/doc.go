// Package purge keeps a node's ring-wide purge orders. A purge order
// names a peer whose captures every node removes and refuses from then on
// (archive.Store.PurgePeer). It is signed by the node that issued it,
// with its libp2p identity key, and a Book carries out only an order
// whose issuer it trusts for that:
//
//   - a purge authority: a peer id the node's operator listed
//     (herod run --purge-authority), typically the node the ring's
//     operator runs `herod purge` on;
//   - the purged peer itself (a retraction of everything it signed);
//   - this node (its own operator's order, through the admin API).
//
// So a member, hostile or not, can erase only its own captures; an order
// from anyone else is refused (Stats.Refused) and not passed on.
//
// Orders travel between members over /herod/purge/1.0.0 (Protocol): an
// Exchanger answers a member's exchange, exchanges with one replica
// (Exchange, which the node runs at the start of each replication round)
// and pushes the orders to the peers in the routing state when one is new
// (Spread, SpreadLoop). The node supplies the streams, the trust gate and
// the routing state (Neighbours; node/purge.go). Book.Issue signs and
// carries out the node's own operator's order (Node.Purge).
//
// Invariants: an order is written to the orders file (synced) before its
// purge starts and again, marked done, after it ends, so a crash in
// between finishes the purge at the next Open; no replication import
// runs while a purge scans the store (Book.Importing; Book.Gated wraps
// the store replication imports into), so a record that
// passed its check before the peer was refused cannot land after the
// scan; at most MaxOrders orders are kept; an Exchanger answers members
// only (registered through the node's kit: Exchanger.Spec) and reads at
// most 512 KiB and MaxOrders orders a request or reply.
//
// Concurrency: a Book and an Exchanger (once its fields are set) are safe
// for concurrent use.
package purge
