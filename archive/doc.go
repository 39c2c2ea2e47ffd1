// Package archive stores every fetched version of every URL a node is
// responsible for, one self-describing WARC file per version, with a
// goleveldb index that answers dated lookups, replication range queries
// and researcher exports.
//
// # What it owns
//
// A store is a directory:
//
//	objects/ab/cd/<sha1(url)><sha1(payload)><day>[.<seq>].warc.gz   version files
//	index/                                                          goleveldb index
//	tmp/                                                            files being written
//
// The two directory levels are the first two bytes of SHA-1(url), which
// are also the top 16 bits of the ring key: a ring range is a contiguous run
// of directories (the Herodotus thesis layout). The file name holds the URL
// key and payload digest in lower-case hex and the crawl day in decimal
// (Unix time divided by the day length). <seq> appears only when one URL
// returns, on the same day, to content it already had that day (A, B, A);
// the name stays unique and nothing is overwritten.
//
// Each file is exactly one gzip member holding one WARC/1.1 "response"
// record: WARC-Type, WARC-Record-ID (a deterministic urn:uuid derived
// from URL, date and digest), WARC-Date (UTC, nanoseconds when present),
// WARC-Target-URI, Content-Type application/http;msgtype=response,
// WARC-Payload-Digest and WARC-Block-Digest (sha1:BASE32), and, for a
// store with a Signer, the version's provenance: WARC-Herod-Peer and
// WARC-Herod-Signature (provenance.go; Import checks them with a
// Verifier, and always refuses capture times in the future). The block is
// the HTTP status line, the headers as received (sorted) and the decoded
// payload. To keep the record self-consistent the writer drops
// Transfer-Encoding and sets Content-Length to the stored payload length;
// the original values survive as X-Archive-Orig-Transfer-Encoding and
// X-Archive-Orig-Content-Length (the pywb/warcio convention). Content-Encoding
// is kept as received, so a caller that decodes a gzip body must drop that
// header (net/http does so when it decompresses transparently).
// Concatenating any set of version files therefore yields a valid .warc.gz,
// which is how Export writes WARC.
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
//   - The files are the truth. The index is a function of the files, except
//     for crawl states (SetState) and unchanged checks (Touch), which no file
//     records; Reindex rebuilds everything else from the files alone and
//     keeps those two from the old index when it can still be read.
//   - A version file's content (the decompressed record) never changes and
//     the file is never deleted once renamed into place. Its bytes change
//     at most once: a file stored with deferred compression is replaced,
//     by rename, with the same record compressed at the store's level.
//   - Put writes the file to tmp/, makes it durable, renames it into
//     objects/, and only then writes the index batch, whose journal sync is
//     group-committed with concurrent Puts. On Linux the files of one index
//     group are made durable together, by one syncfs(2) of the store's
//     filesystem in the committer before it renames them (commit.go); that
//     costs about what one fsync costs and stands for an fsync per file,
//     which on the development VM took ~300 us of kernel CPU each (CPU
//     profile of scripts/bench-crawl.sh). Before it syncs a group the
//     committer lets the Puts already under way join it (up to
//     Options.CommitWindow, 20 ms by default; never when none is under
//     way), which halves the syncs of 8 concurrent writers.
//     Elsewhere each file is fsynced before its rename. On journaling file
//     systems (ext4) the index sync also commits the renames, so a crash
//     leaves at worst an unindexed complete file
//     (found by Fsck, indexed by Reindex) or a temporary file (removed by
//     Open); the index never names a partial file. Options.NoSync trades
//     this for speed in bulk loads.
//   - Every read verifies gzip framing, WARC framing, block digest, payload
//     digest and that the content matches the file name (ErrCorrupt).
//   - Directory hashes (DirSum: XOR of SHA-1 of file names, and a count) for
//     the root, the 256 first-level and the 65,536 leaf directories are
//     updated in the same index batch as the version they describe.
//   - The quota counts the apparent size of version files. A Put that would
//     exceed it stores nothing and returns ErrQuota; Stats reports it and the
//     store logs it once.
//
// # Deferred compression
//
// Compressing a page at level 6 is most of a Put's CPU. When the
// processing gate (Options.CPU) has callers waiting for a worker — the
// node fetches faster than it can process — Put stores the record
// uncompressed (deflate's stored blocks: a copy, ~2.3 times level 6's
// bytes until recompressed), marks the file with a gzip extra
// subfield "Hd" and lists it in the index ('d' space); once the store has
// written no such file for Options.RecompressAfter and nothing waits for
// the gate, a background loop recompresses the listed files on the gate's
// low-priority workers, verifying each new encoding before it replaces the
// old one through the group commit (deferred.go). The result is byte for
// byte what an immediate Put writes. Stats.Deferred counts files waiting;
// Options.CompressNow turns deferral off; Recompress does the work on
// demand. Deferred files are valid version files meanwhile: any gzip
// reader reads them, exports copy them as they are, replicas receive them
// marked and recompress them themselves, and Reindex rebuilds the list
// from the marks.
//
// # Queries
//
//   - Versions(url), At(url, t): the history of one URL and the newest
//     version not newer than t (one index seek; Read then verifies the file).
//   - URLs / Scan(Query): by host, URL prefix and capture-time window, in
//     host, URL, time order (a host index 'n' keeps one entry per URL).
//   - Range(a, b], Entries(a, b]: the files of a ring range, for
//     replication; Checks(url): days a URL was found unchanged.
//
// # Replication support
//
// A replica pair compares sets of file names with DirSums. RangeSum(a, b)
// gives one sum for any ring range (a, b]: whole directories inside the
// range are read from their stored sums, the two boundary leaves are
// scanned. On a mismatch the peers bisect (RangeSum of sub-ranges, or
// DirHash/ChildHashes of aligned directories: root -> 256 -> 65,536),
// then list Entries of the differing ranges, fetch missing files with
// ReadFile and store them with Import, which verifies the bytes against the
// name before writing. The hashed entry is the whole file name, which
// includes the payload digest: the thesis hashes (SHA-1(url), day) pairs,
// but including the digest also reconciles two replicas that hold
// different content for the same URL and day (both keep both; nothing is
// deleted).
//
// # Export
//
// Export writes the versions a Query selects as one .warc.gz (the stored
// files verbatim) plus a CDXJ index ("surt timestamp {json}", sorted, with
// the fields and SURT rules of pywb and warcio, so TestExportWarcio can
// compare it line by line with warcio's own cdx-index output). With
// Revisits it adds identical-payload-digest revisit records for the days a
// URL was checked and unchanged (recorded by Put when the payload equals
// the newest version, and by Touch for 304 answers). Exports are resumable:
// every record has a cursor (ExportStats.Cursor, ExportOptions.Progress)
// and ExportOptions.After continues after it.
//
// # Reindex and fsck
//
// Reindex(dir) rebuilds the index from the files (quarantining bad ones);
// Fsck(dir) verifies every file and compares the implied index with the
// live one without changing anything. TestReindexEqualsLiveIndex proves the
// rebuilt index is byte-for-byte the live one. Open rebuilds a missing
// index by itself.
//
// # Numbers
//
// Measured on the shared 2-core development VM while other builds kept its
// load average at 12-18, so wall-clock rates are depressed; the per
// CPU-second rates (user+system time of all threads) are the "one core"
// figures. Pages of 10-30 KB (mean 20.9 KB):
//
//	go test -run XXX -bench 'BenchmarkPut|BenchmarkAt' -benchtime 1000x ./archive/
//	HEROD_HTML_CORPUS=/usr/share/doc go test -run XXX -bench DiskPer -benchtime 1x ./archive/
//
//	                                       per CPU-second   wall, loaded
//	Put, gzip 6 (default), fsync             490-640          100-200/s
//	Put, gzip 6, NoSync                      680-1,030        260-350/s
//	Put, gzip 9, NoSync                      410-510          150-430/s
//	Put, 8 writers, fsync (group commit)     500-580          370-410/s
//	  same, committer goroutine (commit.go)  590-840          910-1,260/s (old code, same session: 640-780, 930-1,140/s)
//	Put, gzip 6, fsync, one syncfs a group   867              639/s (fsync per file, same session: 624, 518/s)
//	  8 writers, commit window (default)     785-900          850-960/s, 128-134 groups/s
//	  8 writers, no window, same run         628-722          890-990/s, 264-289 groups/s
//	Put of an unchanged page (0 new bytes)   28,000-44,000
//	At, index only                           110,000-190,000
//	At + Read (file read, gunzip, 2 SHA-1)   3,800-4,700
//
// WebBase: 6,100 additions/s simulated (log-structured, no per-page sync,
// pages compressed by the crawler), 3,200/s in its prototype, 33-51 random
// page reads/s. Here gzip of each page takes about half of a Put's CPU and
// the syncs (file or group syncfs, index journal) most of the rest of its
// wall time.
//
// Bytes on disk per byte of HTML, apparent size / allocated 4 KiB blocks
// (du), target <= 0.30 (WebBase 0.27):
//
//	generated pages (prose-heavy, random vocabulary)  gzip 6: 0.340 / 0.453   gzip 9: 0.329 / 0.437
//	/usr/share/doc pages (52)                          gzip 6: 0.253 / 0.360   gzip 9: 0.246 / 0.349
//	Rust std documentation                             gzip 6: 0.234 / 0.358   gzip 9: 0.229 / 0.351
//	Rust book                                          gzip 6: 0.282 / 0.386   gzip 9: 0.276 / 0.385
//	an unchanged page                                  0 bytes
//
// Real HTML meets the target in apparent size; one file per version pays
// about 0.1 more in block rounding, which only packing versions into larger
// files (or a file system with tail packing) would remove.
//
// # Concurrency
//
// All methods are safe for concurrent use. Puts of the same URL are
// serialized (so deduplication against the newest version is exact); Puts
// of different URLs compress and write their files in parallel and
// serialize only the short building of their index batch (under one
// mutex, reading the directory sums through an overlay of the batches not
// yet committed); one committer goroutine syncs and renames the files of
// the batches that queued up meanwhile and writes the batches with one
// synced write (commit.go), and each Put returns
// once its batch is durable. No lock is held across an fsync, so Puts
// never queue behind another Put's sync. Readers never block writers
// (goleveldb snapshots). Only one process may open a store at a time
// (goleveldb's lock enforces it); Reindex and Fsck need the store closed.
package archive
