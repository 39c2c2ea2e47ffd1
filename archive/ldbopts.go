package archive

import (
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// indexOptions returns the goleveldb options of the index
// (docs/scale-flat.md). The index is keyed by URL hash, so a day's
// writes land all over the key space and its reads (crawl states before
// each fetch, newest versions) are random:
//
//   - a bloom filter of 10 bits a key (1% false positives) lets a Get
//     skip every table that lacks the key without reading its blocks: a
//     Get consults one table a level, and most are misses;
//   - a 16 MiB write buffer and 8 MiB tables make fewer, larger level-0
//     flushes; CompactionTotalSize 64 MiB is goleveldb's base, which it
//     multiplies by 10 per level (level 1 holds 640 MiB, level 2 6.4 GiB),
//     so at a million URLs the whole index sits in levels 0 and 1 and a
//     level-0 compaction rewrites the level-1 tables its hash keys overlap
//     (all of them). BenchmarkIndexCheckDays measures what that costs a
//     revisit day: at 1 M URLs about 340 MiB written a day and 0.01 CPU
//     seconds per 1,000 URLs, writes included (docs/scale-storage.md);
//   - no seek compactions (DisableSeeksCompaction): goleveldb otherwise
//     rewrites a table that Gets consulted before another size/16 KiB
//     times, which random reads of a growing index do all day;
//   - a 32 MiB block cache keeps the upper levels and the filters in
//     memory.
//
// The options change no on-disk format: tables written before the filter
// are read as before.
func indexOptions(o opt.Options) *opt.Options {
	o.Filter = filter.NewBloomFilter(10)
	o.WriteBuffer = 16 * opt.MiB
	o.CompactionTableSize = 8 * opt.MiB
	o.CompactionTotalSize = 64 * opt.MiB
	o.BlockCacheCapacity = 32 * opt.MiB
	o.DisableSeeksCompaction = true
	return &o
}

// DBStats fills st with the index database's goleveldb statistics: its
// level sizes and, since it was opened, the bytes compactions read and
// wrote per level (the scale benchmark's per-database table,
// docs/scale-storage.md).
func (s *Store) DBStats(st *leveldb.DBStats) error { return s.db.Stats(st) }
