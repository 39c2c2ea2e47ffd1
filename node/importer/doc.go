// Package importer brings collections other tools wrote into the ring:
// WARC files (plain, gzip, zstd), WACZ files and ARC files (version 1
// and 2), from wget, warcio, Heritrix, browsertrix or any conformant
// writer. The importing node reads a file (source.go, arc.go), turns each
// response, resource and revisit record into a capture at its original
// date (convert.go), signs it as imported (archive.Store.EncodeImported:
// the source file's SHA-256, the record's id, the import time) and sends
// it to the owner of its URL by the ring (Protocol), which verifies and
// stores it (archive.Store.AddImported) and pushes it to its replicas as
// it pushes a crawl. A record an owner holds already (same URL, date and
// payload) costs nothing. A record that cannot be read or converted is
// reported with its place in the file, and the others go on. A journal
// per source file (journal.go) says how far the import got, so that a
// killed import run again sends only what was not settled.
//
// Invariants: an imported record always says so (its import fields are
// signed with it); an owner stores only records signed by the member
// that sends them, read by it no more than MaxAge ago, of URLs it owns.
//
// Concurrency: an Importer and a Server are safe for concurrent use.
package importer
