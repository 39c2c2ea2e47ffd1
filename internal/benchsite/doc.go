// Package benchsite serves a directory over HTTP on loopback for crawl
// benchmarks and records what it answered, so that a benchmark can prove
// that two crawlers (wget -r and herod, say) fetched the same set of URLs
// and can see whether a crawler kept the server busy.
//
// The server is net/http's file server: Content-Type from the file
// extension, Last-Modified from the file's modification time, conditional
// requests (If-Modified-Since, Range) answered as net/http does. It listens
// on loopback addresses only.
//
// Invariants: a Record covers exactly the requests answered since the last
// Reset (or Start); Record.Paths holds each path answered 200 once,
// robots.txt aside, sorted.
//
// Concurrency: every method is safe for concurrent use; requests are served
// concurrently and recorded under one mutex.
package benchsite
