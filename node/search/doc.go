// Package search is a node's side of full-text search (docs/search.md):
// the postings of a term live at the holders of its ring key (the owner
// of SHA-1(term) and its successors on K real nodes in all), and any
// node's gateway asks them.
//
// Service is a ring member's search service. As a Sink (Add) it takes
// the postings the node's indexer makes, sorts them by term key, finds
// each run's owner with one lookup (the owner of one key owns every key
// up to its own id) and the owner's successors, and delivers each real
// node its postings in one acknowledged message of Protocol (its own
// into the local store). As a Source (Postings) it asks two holders of a
// term at once and merges their answers, so that no single holder can
// hide a posting; the gateway's engine verifies every result from its
// capture, so that none can invent one. Its Stats estimate the ring's
// collection statistics from this node's document table and the share of
// the key space it owns. Notify queues the URLs whose versions the node
// stores, indexed in batches by Run; Run first backfills the URLs this
// node owns, which also rebuilds the postings of a term range at its
// current holders after an owner change or a crash that lost a batch.
// After a clean stop the backfill takes only the URLs the stop's Mark
// cannot vouch for (mark.go): those in leaves of the archive that
// changed since, or outside a range the node owned throughout.
// SyncRound (RunSync: periodic and after ring changes) compares each range
// this node owns with its other holders by digests on SyncProtocol, pulls
// what it lacks and has them pull back, so a holder that missed postings
// or a new holder gets them without any restart (syncround.go).
//
// Invariants: Protocol is served through the node's kit (members only);
// a request is one JSON frame and, for an add, one frame of a posting
// set (search.AppendPostingSet) of at most maxAddPostings postings in
// at most maxAddBytes, each checked (search.Posting.Check); a query's reply holds at most maxReplyPostings
// postings. The notify queue is bounded: a URL that does not fit is
// counted (Stats.Dropped) and indexed by a catch-up (Indexer.CatchUp)
// once the queue is empty.
//
// Concurrency: a Service is safe for concurrent use once its fields are
// set; Run runs once.
package search
