// Package cdx is herod's query model above the store and below the
// gateway: which captures a request selects (Query, with its MatchType),
// where a capture stands in CDX order (Key, printed as the CDX API's
// resumeKey), and the row the CDX API lists (Row). The gateway parses
// HTTP requests into these types; the node answers them ring-wide
// (node/query, node/export); herod export builds them from its flags.
//
// A Query is translated into the store's scan (archive.Query) by
// Query.Store and back by FromStore, the one place the two meet; the
// query protocol between nodes carries the store's form.
//
// Everything here is a value type with no I/O: safe for concurrent use.
package cdx
