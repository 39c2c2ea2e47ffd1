// Package links is the ring's link index: the owner of a URL keeps the
// links that point to it, each with the source page, its anchor text and
// the span of time the source carried it, so that "which pages linked to
// X as of D" is one question to X's owner.
//
// The source side (Indexer) reads, for a page this node owns, the
// versions of it the archive holds, oldest first, and turns them into
// Records: a link becomes a record when a version carries it for the
// first time (From: that version's capture time) and the record ends
// (Until) at the first later version that lacks it. The Indexer keeps,
// per source, the last version it read and the links still open, so
// each new version costs one read and one diff; a source it has no state
// for (a range this node just took over) is read from its first version,
// which rebuilds every record of the source from the replicated archive.
// Records are idempotent: a record is named by (target, source, From),
// and a later copy of it (its range ended, its anchor seen again) simply
// replaces the earlier.
//
// The target side (Index) stores records in goleveldb under the node's
// data directory, at most Config.PerTarget a target (the rest counted,
// not kept), and answers Links(target, at). Sources hidden by access
// rules or covered by a purge are left out when the index is read
// (Index.Filter), so that a purge or exclusion takes effect at once
// without rewriting the index.
//
// The wire protocol (Protocol, Header, EncodeRecords, DecodeRecords)
// carries batches of records to their targets' holders and questions to
// them; a Router sends them there (the owner and the next real nodes)
// and merges the holders' answers; the node (node/linkindex.go) supplies streams, the ring and the
// trust gate. A holder checks a record's form only; before a record is
// shown, a Verifier reads the source capture it names (through the
// gateway's archive) and keeps it only if that capture carries the link
// (Carried, the extractor the Indexer builds records with); see
// docs/links.md.
//
// Dirty is the bounded set of sources a sweep must read again (a new
// version, a failed delivery); past its bound, or when new, it asks for a
// sweep of every source instead, so an overflow costs a full sweep,
// never a missed version (a version never marked is found by the
// node's slow pass, node/linksweep.go).
//
// Concurrency: an Index, an Indexer and a Dirty are safe for concurrent
// use.
package links
