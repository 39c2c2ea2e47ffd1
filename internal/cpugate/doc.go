// Package cpugate runs page processing on a bounded set of worker
// goroutines, each on an OS thread of its own at a lower scheduling
// priority, so that processors stay free for the network and the
// goroutines the network wakes come first.
//
// Go's scheduler does not preempt a running goroutine for one whose socket
// became readable: while every processor (GOMAXPROCS) runs CPU-bound work,
// a goroutine woken by the network waits for the next scheduling point,
// up to a 10 ms preemption tick. A crawler whose fetch loop exchanges one
// request at a time on a connection pays that wait on every request, and
// net/http's transport hands each exchange between three goroutines. A
// Gate with GOMAXPROCS-1 workers, given only computing (hashing,
// compressing, parsing, writing a file) and never waiting on a lock or the
// network (nor, on Linux, where the archive syncs a group of files at
// once outside the gate, on a disk sync), keeps a processor for the
// wake-ups.
//
// That leaves the operating system's scheduler: with as many threads
// computing as there are CPUs, a woken fetch thread still waited its turn
// (a median request-to-response time of 340-375 µs on loopback against a
// server busy for ~55 µs). The workers' threads therefore run at nice
// +Nice (Linux keeps a nice value per thread; an unprivileged process may
// raise it but never lower it again, which is why the threads are the
// workers' for life and run nothing else): the kernel then runs a woken
// fetch thread ahead of them (a median of 115-134 µs). docs/crawl.md has
// the measurements.
//
// A hand-off to a worker and back costs ~20 µs of CPU (BenchmarkDo: the
// worker's thread sleeps between jobs); DoBytes runs work on less than
// InlineBytes of input, such as hashing a small page, in the caller. A
// worker may land on the process's main thread; it then starts another
// and leaves that thread at its priority.
package cpugate
