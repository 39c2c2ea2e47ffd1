// Package search is herod's full-text search as of any date: text
// analysis, postings, a node's posting store and the query engine
// (docs/search.md).
//
// Analysis is bleve's English analyzer (Analyze: Unicode segmentation,
// possessives, lower case, English stop words, Porter stemming); queries
// and documents share it. Extract takes a capture's title and visible
// text (HTML through archive/exchange.ParseHTML, plain text as is).
//
// A Posting says that one version of one URL holds one term, with the
// version's live range [From, To) in capture times (Unix ms; To is the
// next version's capture time, Open while it is the newest), its term
// frequencies and its length. The Indexer makes them from the archive:
// at crawl time for the newest two versions of a URL (the new one starts
// its range, the one before is ended; a 404 or any version without text
// only ends) and as a backfill over every version the archive lists. A
// posting's identity is (term, URL key, From): sending one again is
// harmless, and an end, once known, stays.
//
// A Store keeps postings in goleveldb: a version table that numbers each
// version and writes its URL, key, live range and length once (its rows
// flagged as the document table of the versions its node indexed, for
// the collection statistics BM25 needs), and per term blocks of version
// numbers and frequencies, two or three bytes a posting (blocks.go,
// versions.go); a stored version's end alone is written apart, in a
// small table folded into the rows from time to time (ends.go); an
// earlier format's store is migrated at open (migrate.go). A Sink that
// is an Ender (StoreSink) ends a changed page's previous version by its
// identity, so that the Indexer need not read and analyze it again.
// Postings travel between nodes as posting sets (AppendPostingSet).
// The Engine answers a query (words, "phrases", site:HOST, as of a time,
// pages or a resume cursor): it fetches each term's postings live at the
// time from a Source, the rarest term first and the others only for its
// candidates, intersects them and ranks them as bleve's BM25 does
// (rank.go), then verifies each result from the capture itself (Texts):
// the capture must hold every term and phrase, its own text gives the
// result's score, title and snippet, and a posting alone never makes a
// result.
//
// Invariants: a Store acknowledges a Put only once it is synced; a crash
// keeps a batch whole or not at all; a posting with a bad term, URL,
// range or counts is refused (ErrBadPosting) and nothing of its batch is
// stored. A query reads at most Engine.Candidates postings a term
// (plus the candidates' own postings of the other terms) and verifies at
// most a page of captures more than it shows.
//
// Concurrency: a Store, an Indexer and an Engine are safe for concurrent
// use; Analyze may be called from any goroutine.
package search
