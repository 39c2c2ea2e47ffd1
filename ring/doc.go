// Package ring is herod's Chord ring: the virtual servers a real node
// runs, their routing state, and the protocol that keeps it correct while
// volunteers' machines come and go.
//
// # What it owns
//
// Each real node (a Contact: libp2p peer id and TCP "ip:port") runs
// VirtualServers virtual servers (Node). A virtual server's id is
// VirtualID(addr, index), SHA-1 of the address's IP and the index, with
// the index below MaxVirtualServers, so a node cannot choose where it sits
// and one IP holds at most MaxVirtualServers positions.
// The owner of key k is successor(k), the first virtual server clockwise
// from k; a virtual server owns the range (predecessor, itself]. With
// Config.ChooseIndexes a node's first Join picks which VirtualServers of
// the MaxVirtualServers allowed indexes it runs (PickIndexes: the ids
// that best split the ring's current gaps), which keeps keys per real
// node near the mean; Ring.Indexes reports them for restarts
// (Config.Indexes). Rebalance, run from time to time by its owner, moves
// one virtual server to another allowed index when the node's part of the
// circle is off its target, choosing the move that most reduces the
// squared deviation of every node it touches (rebalance.go, OpShare); a
// virtual server found running the same id as another peer's (two nodes
// at one IP joined at once) moves at its next stabilization.
//
// Each virtual server keeps a predecessor, a successor list of length r
// (SuccessorListLen) and a finger table (finger i = successor(id+2^i)).
// Maintenance rounds (Maintain, run by Start every StabilizeInterval with
// ±50% jitter) do Chord's stabilize / notify / check-predecessor /
// fix-fingers, and probe recently dead peers so that rings split by a
// partition merge again when it heals (and, with a Config.Resolver such
// as ring/p2p.DHT, find peers whose address changed). A neighbour is
// declared dead after three consecutive failed calls (maintenance calls
// retry once at once), then dropped from every table and suspected for
// three intervals. Lookup is the thesis's iterative
// algorithm: ask successively closer nodes for their preceding-node lists,
// routing around nodes that do not answer, until a node reports the key
// between itself and its successor. A real node answers lookup steps from
// the union of all its virtual servers' tables. Lookup and Successors
// first try those tables alone (known.go): when the predecessors and
// successor lists of the local virtual servers cover the key and its
// holders without a gap (in a ring of a few nodes they cover the whole
// circle) and the owner answered a call within two maintenance rounds,
// the answer costs no message; an owner that disowns such an answer is
// reported with Disowned, and lookups route for three rounds.
//
// # Invariants
//
//   - No node enters a routing table (predecessor, successor list,
//     fingers) unless Admit accepts it: its id equals VirtualID(Addr,
//     Index), Index < MaxVirtualServers, and Transport.Verify confirms that
//     Addr, dialed directly, authenticates as Peer (the thesis's nonce
//     check). Refusals are counted (Counters.Refused) and listed in Status.
//   - State-changing requests (notify, suggest, leave) are accepted only when the
//     claimed sender's peer id equals the peer id the transport
//     authenticated.
//   - A successor list is sorted clockwise from its vnode, without
//     duplicates, and is [self] only when the vnode knows no live
//     successor; such a vnode answers no lookup step until stabilization
//     refills the list from its other tables.
//   - Every change of a vnode's range or successor list is published as an
//     Event to subscribers, after the change.
//
// # Transports
//
// The ring talks through the Transport interface: ring/p2p over libp2p
// streams, ring/memnet in memory for tests and the simulator (ring/sim).
// ring/ringtest is the shared suite both pass.
//
// # Concurrency
//
// All exported methods are safe for concurrent use. One mutex guards the
// routing state and is never held across a network call or while events
// are delivered, so handlers of other nodes may call back into this one.
// Handlers never block on the network except for Verify of a new contact.
package ring
