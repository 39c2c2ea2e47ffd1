// Package cpugate bounds how many goroutines do CPU-bound page processing
// at once, so that one processor stays free for the network.
//
// Go's scheduler does not preempt a running goroutine for one whose socket
// became readable: while every processor (GOMAXPROCS) runs CPU-bound work,
// a goroutine woken by the network waits for the next scheduling point,
// up to a 10 ms preemption tick. A crawler whose fetch loop exchanges one
// request at a time on a connection pays that wait on every request, and
// net/http's transport hands each exchange between three goroutines. A
// Gate with GOMAXPROCS-1 slots, held only while computing (hashing,
// compressing, parsing) and never while waiting on a disk, a lock or the
// network, keeps a processor for the wake-ups (docs/crawl.md has the
// measurements).
package cpugate
