// Package archive stores every fetched version of every URL a node is
// responsible for, as WARC records appended to segment files (gzip
// members, or zstd frames with a trained dictionary: zstd.go), with a
// goleveldb index that answers dated lookups, replication range queries
// and researcher exports.
//
// # What it owns
//
// A store is a directory:
//
//	segments/<id>.warc.gz   append-only segments, 8-digit ids from 1 (segment.go)
//	segments/<id>.warc.zst  the same, once the store has its dictionary (zstd.go),
//	                        or of a peer's dictionary, for its records kept as sent
//	dictionary              the store's own zstd dictionary, empty if none (dicts.go)
//	index/                  goleveldb index
//	refused-peers           peers whose records are refused (PurgePeer)
//	purged-urls             URL purges: captures refused and removed (PurgeURLs)
//	quarantine/             damaged segment tails cut by Reindex; files migration refused
//
// Each version is one gzip member (or zstd frame) holding one WARC/1.1
// "response" record: WARC-Type, WARC-Record-ID (a deterministic urn:uuid
// derived from URL, date and digest), WARC-Date (UTC, nanoseconds when
// present), WARC-Target-URI, Content-Type
// application/http;msgtype=response, WARC-Payload-Digest and
// WARC-Block-Digest (sha1:BASE32), and, for a store with a Signer, the
// version's provenance: WARC-Herod-Peer and WARC-Herod-Signature
// (provenance.go; Import checks them with a Verifier, and always refuses
// capture times in the future). The block is the HTTP status line, the
// headers as received (sorted) and the decoded payload. To keep the record
// self-consistent the writer drops Transfer-Encoding and sets
// Content-Length to the stored payload length; the original values survive
// as X-Archive-Orig-Transfer-Encoding and X-Archive-Orig-Content-Length
// (the pywb/warcio convention). Content-Encoding is kept as received, so a
// caller that decodes a gzip body must drop that header (net/http does so
// when it decompresses transparently). A .warc.gz segment is therefore a
// valid .warc.gz, and so is any concatenation of gzip records, which is
// how Export writes WARC. A page's screenshot (screenshot.go) is a
// "resource" record instead: its block is the PNG alone and its
// Content-Type field the image's type; it reads back as a 200 answer.
//
// Segments roll by size (Options.SegmentSize, 1 GiB by default) and by
// day. The index maps each version — key SHA-1(url), capture time, payload
// digest — to its segment, offset and size, with URL, day, status, media
// type, payload length, Seq and its signing peer (interned). A version's
// replication name is its Entry: (SHA-1(url), SHA-1(payload), day, seq),
// where seq tells apart a URL's returns to content it already had that
// day (A, B, A); the name is what replicas compare and transfer.
//
// The package writes WARC itself rather than using github.com/nlnwa/gowarc:
// gowarc's module pulls in prometheus/prometheus and a WHATWG URL parser,
// and its record builder spools through its own temporary files, while the
// subset needed here (one response or revisit record per gzip member, SHA-1
// digests) is about two hundred lines. Independence from this code is
// checked instead by validating exports with warcio (npm) in
// TestExportWarcio.
//
// # Invariants
//
//   - The segments are the truth. The index is a function of them, except
//     for crawl states (SetState) and unchanged checks (Touch), which no
//     record holds, and purges (versions of refused peers are left out);
//     Reindex rebuilds everything else from the segments and keeps those
//     from the old index when it can still be read.
//   - Bytes of a segment before its committed end never change. A record
//     is appended (one pwrite) before its index entry is queued; the
//     committer fsyncs every segment a group wrote to, then writes the
//     group's batch, with the segments' new committed ends, in one synced
//     write (commit.go). A new segment is made durable in its directory
//     before any record in it is acknowledged. Open cuts each segment to
//     its committed end: a torn record or one whose group never committed
//     was never acknowledged.
//   - A failed write or sync fails the store: every later write returns
//     ErrFailed until the store is reopened (as etcd does), so no group is
//     built on the sums and totals of one that failed, and nothing written
//     after a lost write-back can be acknowledged.
//   - Index swaps (Reindex) go through index.new, index.ready and
//     index.old with a directory fsync after each rename; Open completes
//     or undoes a swap a crash interrupted (swap.go).
//   - Every read verifies gzip (zstd) framing, WARC framing, block
//     digest, payload digest and that the record is the version the
//     index names (ErrCorrupt).
//   - Directory hashes (DirSum: XOR of SHA-1 of entry names, and a count)
//     for the root, the 256 first-level and the 65,536 leaf buckets of the
//     key space are updated in the same index batch as the version they
//     describe, additions and purges alike.
//   - The quota counts the bytes of the records of indexed versions. A Put
//     that would exceed it stores nothing and returns ErrQuota; Stats
//     reports it and the store logs it once.
//   - Unchanged pages cost nothing: a Put whose payload digest and status
//     equal the newest version's writes no record and records the check.
//
// # Queries
//
//   - Versions(url), At(url, t), Get: the history of one URL and the
//     newest version not newer than t (one index seek; Read is one pread
//     of the record, then verification).
//   - URLs / Scan(Query): by host, URL prefix and capture-time window, in
//     host, URL, time order (a host index 'n' keeps one entry per URL).
//   - Range(a, b], Entries(a, b]: the versions of a ring range, for
//     replication; Checks(url): days a URL was found unchanged.
//
// # Replication support
//
// A replica pair compares sets of entry names with DirSums. RangeSum(a, b)
// gives one sum for any ring range (a, b]: whole buckets inside the range
// are read from their stored sums, the two boundary leaves are scanned.
// On a mismatch the peers bisect, list Entries of the differing ranges,
// fetch missing records with ReadStored (as stored: a gzip member, or a
// zstd frame naming its dictionary) and store them with Import, which
// verifies the bytes against the name before appending them unchanged;
// a dictionary the store lacks is added with AddDictionary, verified by
// its hash (dicts.go).
//
// # Purge
//
// PurgePeer(peer) adds the peer to refused-peers (synced) and takes every
// version it signed out of the index in one group: they are no longer
// served, exported, replicated or counted. Their records stay in their
// segments as dead bytes (Reindex leaves refused peers' records out)
// until Compact(dir) rewrites each segment whose dead share reaches
// CompactOptions.MinDead without them, under the same id, through a
// .compact file, one synced index write and a rename that Open finishes
// if a crash interrupted it (compact.go).
//
// PurgeURLs(p) removes the captures of a SURT prefix (or one URL) within
// a capture-date window — a takedown — from the open store: recorded in
// purged-urls first (Put, Import and Reindex refuse covered captures from
// then on), then out of the index in one group, then out of the segments
// that held them by the same rewrite as Compact, done while the store
// stays open (purge.go).
//
// # Export
//
// Export writes the versions a Query selects as one .warc.gz (the stored
// records verbatim, each one pread) plus a CDXJ index ("surt timestamp
// {json}", sorted, with the fields and SURT rules of pywb and warcio, so
// TestExportWarcio can compare it line by line with warcio's own
// cdx-index output). With Revisits it adds identical-payload-digest
// revisit records for the days a URL was checked and unchanged. Exports
// are resumable: every record has a cursor (ExportStats.Cursor,
// ExportOptions.Progress) and ExportOptions.After continues after it.
//
// # Reindex, fsck and migration
//
// Reindex(dir) rebuilds the index from the segments, resynchronizing at
// the next gzip header (zstd frame) after a damaged record and cutting a
// damaged tail (kept in quarantine/); Fsck(dir) verifies every record
// and compares the implied index with the live one without changing
// anything.
// TestReindexEqualsLiveIndex proves the rebuilt index equals the live
// one. Open rebuilds a missing index by itself, and moves a store of the
// one-file layout (objects/ab/cd/<name>.warc.gz) into segments, resumably
// (migrate.go).
//
// # Concurrency
//
// All methods are safe for concurrent use. Puts of the same URL are
// serialized (so deduplication against the newest version is exact); Puts
// of different URLs hash and compress in parallel, append under a short
// segment lock, and serialize only the building of their index batch
// (under one mutex, reading the directory sums through an overlay of the
// batches not yet committed); one committer goroutine commits the groups
// that queued up meanwhile, waiting up to Options.CommitWindow for the
// Puts under way to join, and each Put returns once its group is durable.
// No lock is held across an fsync. Readers never block writers (goleveldb
// snapshots, pread). PurgePeer holds every key lock while it runs. Only
// one process may open a store at a time (goleveldb's lock enforces it);
// Reindex, Fsck and Compact need the store closed.
package archive
