package search

import (
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// storeOptions returns the goleveldb options of the posting store
// (docs/search-store.md, "Measured"). A batch of new versions rewrites
// the tail of each of its terms, spread over the tails' key range,
// writes the full blocks that filled at the top of theirs, and ends
// older versions whose rows lie anywhere:
//
//   - a bloom filter of 10 bits a key lets a Get (a query's full
//     blocks) skip the tables that lack the key; a write reads by
//     iterator (put.go, blockIters), and seek compactions are off
//     (DisableSeeksCompaction): goleveldb compacts a table that many
//     Gets consulted before another;
//   - an 8 MiB write buffer and 8 MiB tables make fewer, larger level-0
//     flushes, and a 64 MiB compaction base (level 1 holds ten times it,
//     640 MiB) keeps a level fewer: a term's tail
//     is rewritten many times a day, and each level a rewritten
//     block passes through before the rewrite drops it is written again;
//   - a 16 MiB block cache keeps the upper levels and the filters in
//     memory.
//
// The options change no on-disk format.
func storeOptions() *opt.Options {
	o := &opt.Options{
		Filter:              filter.NewBloomFilter(10),
		BlockCacheCapacity:  16 * opt.MiB,
		WriteBuffer:         8 * opt.MiB,
		CompactionTableSize: 8 * opt.MiB,
		CompactionTotalSize: 64 * opt.MiB,
	}
	o.DisableSeeksCompaction = true
	return o
}
