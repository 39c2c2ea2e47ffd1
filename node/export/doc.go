// Package export is the ring-wide export stream: how one member answers
// an export request from its archive (Serve), how the asking node reads
// and checks that reply (Open, Member), and how it merges the members'
// replies into one .warc.gz in the archive's export order (Merge).
//
// A reply is a sequence of frames (internal/wire): per record a JSON
// header (URL, capture time, payload digest, exact cursor) and a frame
// holding the record as one gzip member; then an end header, carrying
// the versions the member skipped as corrupt and, if it stopped early,
// why. Opening the streams to the members and the fan-out are package
// query's (node/query/export.go).
//
// Invariants: a record is merged only after its header matched the query
// (its URL, time and URL filters; a response's status and media type,
// read from its head, when the query filters on them) and came strictly after the previous one (and after the resume cursor),
// and its body proved to be exactly one gzip member holding one WARC
// response record (or, when asked for, a revisit) whose target, date and
// block and payload digests agree with the header, preceded in the frame
// at most by that response's request record, exactly as its signed
// request head yields it (request.go); a remote member's
// record is merged only once it also passed the asking node's import
// check (Verifier: the fetcher's signature, the purge book), and its
// revisit only when it refers to a version of the same URL that passed
// earlier in its reply (or lies before the resume cursor) — one that
// fails is dropped and counted (Member.Dropped, Dropped), never
// exported; a record equal to the one just written (the same version
// from two replicas) is dropped; a
// member's failure or skipped versions end the merge with an error
// wrapping ErrPartial, never silently. What was written before an error
// is a correct prefix of the full export, so resuming after the last
// cursor gives exactly the rest. With Filter.Latest the merge holds a
// URL's record until the next URL's and writes the newest the members
// sent.
//
// Concurrency: a Member is read by one goroutine; Serve, Open and Merge
// keep no shared state.
package export
