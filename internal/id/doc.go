// Package id defines the 160-bit identifier shared by the ring and the
// archive: a Chord id, the SHA-1 of a canonical URL, and the SHA-1 of a
// payload are all values of type ID.
//
// ID is a value type usable as a map key and compared with ==. The package
// also owns the circle arithmetic of the identifier space (open and
// half-open intervals that wrap, powers of two for finger starts), so that
// range math is written once and tested once.
//
// Everything here is pure and safe for concurrent use.
package id
