// Package ringcheck checks a whole ring against the ground truth of all
// its live virtual servers: the true owner of a key (Owner), whether
// every virtual server knows its true neighbours (Linked) and its true
// successor list (Consistent), and whether every ring routes probe keys
// (ProbeKeys) to their true owner (Stable). It imports no test code, so
// node's LocalRing (which herod demo runs) uses it as the ring tests do,
// through ring/ringtest.
package ringcheck
