// Package p2phost builds and keeps the libp2p host a herod node runs on:
// the host itself (New: TCP and QUIC, a member's TCP addresses dialed
// first (tcpFirst), Noise, the resource manager with
// herod's connection rate limits, port mapping, AutoNAT v2, the relay
// client and hole punching), per-protocol stream limits (LimitProtocols),
// the circuit relay a reachable member runs for others
// (StartRelayService), joining through a relay when nothing can dial the
// node (RelayedAddress, KeepRelayed), finding the household's other nodes
// on the LAN (StartLAN), and reading and writing member addresses as
// given to --join (ParseContact, RelayContactOf; JoinAddr, Members).
// Which protocols get which limits, and when a node joins through a
// relay, is the node's wiring (node/limits.go, node/node.go); how its
// ring address is chosen is package reach's.
//
// Invariants: a stream over its protocol's limit is reset before its
// handler runs; a circuit a relay serves has no time or byte cut (ring
// traffic runs over it), only bounds on reservations and circuits; a
// relayed node that loses its relay or its public IP says so once, on
// the channel KeepRelayed was given, and stops.
//
// Concurrency: every function is safe for concurrent use; KeepRelayed
// runs until its context ends or it reported a change.
package p2phost
