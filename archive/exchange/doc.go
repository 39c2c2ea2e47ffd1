// Package exchange turns herod's WARC exports into the formats other web
// archiving and research tools read without conversion:
//
//   - WACZ 1.1.1 (WACZ, NewWACZ): a zip of stored (not deflated) members —
//     archive/data.warc.gz, indexes/index.cdxj, pages/pages.jsonl,
//     datapackage.json with the SHA-256 of every file, and
//     datapackage-digest.json, optionally signed with the node's key.
//     ReplayWeb.page and pywb open it as is.
//   - a link graph (Links): one "source<TAB>target<TAB>day" line per link
//     of each archived HTML version.
//   - plain text (Texts, TextsWith): one JSON line per archived HTML
//     version with its status, title and extracted text.
//   - a WARC with outlink metadata records (WithOutlinks), and the CDXJ
//     index of a WARC as it is written (Index).
//
// Export is the one export path of herod export and the gateway's /export:
// given a Source of the .warc.gz stream it writes the WARC behind its
// warcinfo record (InfoFirst), or converts it to one of the formats above
// on the fly.
//
// Every format is built from a .warc.gz stream as archive.Store.Export and
// the ring-wide export write it (one record per gzip member), read with
// Records, so the same code serves a node's own archive and a ring-wide
// stream. The package keeps no state between calls; a WACZ value is used by
// one goroutine.
package exchange
