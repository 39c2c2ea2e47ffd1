// Package throttle caps the bandwidth of byte streams: a Limiter is a
// token bucket of bytes per second (golang.org/x/time/rate), and Reader
// and Writer wrap a stream so that it moves no faster than every limiter
// it passes through. herod puts the crawler's response bodies behind the
// download cap, and the replication streams behind both the node's caps
// and the replication share of them: a node's four limiters are its Caps
// (caps.go).
//
// A nil *Limiter is no limit, so a disabled cap costs a nil check. A
// Limiter is safe for concurrent use: every stream wrapped with it draws
// from the same bucket. Reads are throttled after the fact (the bytes a
// Read returned are paid for before the next Read returns), writes before
// each chunk is written; a wait ends early, with the context's error,
// when the context given to Reader or Writer is done.
package throttle
