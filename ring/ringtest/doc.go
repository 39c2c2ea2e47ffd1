// Package ringtest holds what every ring transport and every multi-node
// ring test needs: the shared ring.Transport conformance suite (Run),
// run against ring/memnet and ring/p2p, and checks of a whole ring
// against the ground truth of all its live virtual servers: the true
// owner of a key (Owner), whether every virtual server knows its true
// neighbours (Linked) and its true successor list (Consistent), and
// whether every ring routes probe keys (ProbeKeys) to their true owner
// (Stable). `herod demo` waits for its local ring with Stable too.
package ringtest
