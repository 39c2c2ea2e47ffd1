// Package reach decides how the ring reaches a node: the address its
// virtual-server ids derive from and that other members verify by
// dialing it, and whether that address is the node's own listen address,
// one its router maps to it (UPnP IGD or NAT-PMP, through libp2p's port
// mapping), or one the operator announced. It also watches a mapped
// address for the router's public IP changing. Joining through a relay
// when nothing is mapped is package p2phost's (RelayedAddress); Relayed
// names that way.
//
// It reads a libp2p host's addresses and events and keeps no state of
// its own: every function is safe for concurrent use.
package reach
