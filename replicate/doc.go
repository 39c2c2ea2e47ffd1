// Package replicate keeps the k replicas of a ring range in step: it
// compares two archives' sums of the range, narrows a mismatch down by
// bisection, and copies the files one side lacks. It is plain logic over
// small interfaces (Local, Peer, RoundTripper); the node supplies the
// libp2p streams and decides which ranges to compare with whom.
//
// # What it owns
//
//   - Sync(ctx, local, peer, a, b): make local hold every file peer holds
//     in the ring range (a, b]. One round trip compares the two DirSums of
//     the whole range (archive.Store.RangeSum: an XOR of SHA-1 of the file
//     names, plus a count); equal sums end the round with a few dozen
//     bytes exchanged. Otherwise the range is split into Fanout (16) equal
//     sub-ranges by id arithmetic (Split), the peer answers all 16 sums in
//     one round trip, and Sync recurses into the sub-ranges whose sums
//     differ, down to ranges of at most ListMax (8) peer files, which are
//     listed on both sides. Records only the peer holds are read from it,
//     up to MaxBatch (64) a round trip from a BatchReader peer such as
//     *Client (OpReadStored: each record as the peer stores it, a gzip
//     member or a zstd frame naming its dictionary; a reply that would
//     pass MaxReply leaves the rest out and they are asked for again),
//     and stored as received with Local.Import, which verifies each
//     against its name. A record whose dictionary Local lacks makes the
//     sync ask the peer for it once (DictPeer) and add it
//     (Local.AddDictionary verifies it by its hash).
//   - The wire protocol (Request, Server, Client): nine operations —
//     OpSums, OpEntries, OpRead, OpReadBatch, OpReadStored, OpPull,
//     OpOffer, OpOfferStored (an offer carrying its records, which
//     WithCarried hands to Copy), OpHandOff (a non-holder's records
//     handed to their owner) — in a compact binary encoding,
//     one request and one reply per round trip, every message bounded
//     (MaxRequest, MaxOfferRequest, MaxReply, MaxEntries, MaxFanout).
//
// # Invariants
//
//   - Nothing is ever deleted: Sync only pulls. Files only the local side
//     holds stay; the peer pulls them in its own Sync (the node runs one
//     in each direction).
//   - No byte from a peer is stored unverified: Import checks the gzip
//     or zstd and WARC framing, both digests, the name and the day, and
//     AddDictionary a dictionary's hash and id. Refused files and
//     names outside the range asked for are counted in Stats.Rejected, and
//     Sync goes on with the rest.
//   - A peer cannot keep a Sync running forever: Options.MaxRequests
//     bounds its round trips (ErrBudget), recursion stops at ranges too
//     narrow to split, and replies are length-bounded.
//   - Traffic counts requests and replies as framed on the wire: payload
//     plus the uvarint length prefix the node's framing adds (libp2p's own
//     encryption and multiplexing overhead is not counted).
//
// # Costs
//
// In sync: one round trip of 67 bytes (45-byte request, 22-byte reply,
// with framing). With d differing files among n: about d·log16(n/8)
// round trips of ~400 bytes, plus listings of at most 8 entries (45 bytes
// each) per differing leaf and one read per 64 missing records — proportional
// to the difference, not to n (TestSyncConverges logs the figures). A flat
// directory listing would cost about 45·n bytes per round.
//
// # Concurrency
//
// Sync is sequential within one call; different Syncs may run
// concurrently over the same Local (archive.Store is safe for concurrent
// use, and Import of a file already present is a no-op). Client and
// Server are safe for concurrent use.
package replicate
