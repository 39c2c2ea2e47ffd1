// Package ringtest holds what every ring transport and every multi-node
// ring test needs: the shared ring.Transport conformance suite (Run),
// run against ring/memnet and ring/p2p, and checks of a whole ring
// (Consistent, Owner) against the ground truth of all live vnodes, which
// are ring/ringcheck's (node's LocalRing uses that package directly).
package ringtest
