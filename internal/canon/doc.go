// Package canon puts URLs into the canonical form whose SHA-1 decides which
// ring node owns them.
//
// The canonical form of an absolute http or https URL: scheme and host in
// lower case, the default port (80 for http, 443 for https) dropped, the
// fragment and any user information dropped, dot segments resolved, an
// empty path written as "/". The query is kept byte for byte. Two spellings
// of the same resource therefore hash to the same key, and Canonical is
// idempotent: Canonical(Canonical(u)) == Canonical(u).
//
// SrcsetURLs finds the URLs of an srcset attribute for the crawler and the
// gateway alike.
//
// Everything here is pure and safe for concurrent use.
package canon
