// Package ringcheck checks a whole ring against the ground truth of all
// its live virtual servers: the true owner of a key (Owner), and whether
// every virtual server knows its true neighbours (Linked) and its true
// successor list (Consistent). It imports no test code, so node's
// LocalRing (which herod demo runs) uses it as the ring tests do, through
// ring/ringtest.
package ringcheck
