// Package ringview holds what a node knows of its ring for people to read:
// the virtual servers it knows of (View, Node), a summary per real node
// (Peer, also the reply of the node's ring-page protocol between members)
// and the headline of the ring's health (Health). The node fills them
// (node/ringpage); the gateway draws them on /ring and herod status prints
// them. Plain values, safe to copy; no I/O.
package ringview
