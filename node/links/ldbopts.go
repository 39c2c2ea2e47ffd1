package links

import (
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// indexOptions returns the goleveldb options of the index's database
// (docs/links.md, "Cost of a sweep"). A sweep's records land all over
// the targets' key space, and a Put reads the records already held of
// its batch, each by key or a target's at once (put.go):
//
//   - a bloom filter of 10 bits a key lets a point read (a record, a
//     source's state, a target's refused count) skip the tables that
//     lack the key;
//   - no seek compactions (DisableSeeksCompaction): goleveldb otherwise
//     rewrites a table that reads consulted before another size/16 KiB
//     times, which a growing index's random reads do all day;
//   - a 32 MiB write buffer: the sweep's records land all over level 1,
//     so every level-0 compaction rewrites the whole of level 1, and
//     four flushes of 32 MiB (not 8) between compactions write a quarter
//     of the bytes (BenchmarkIndexPut at 1 M sources: 707 MB of
//     compaction output, not 3,202; the process's RSS budget, 448 MiB
//     of Go memory in docs/scale.md, holds the larger buffer);
//   - compaction at 8 level-0 tables, not 4 (writes slowed at 16 and
//     paused at 24): each level-0 compaction rewrites level 1, so
//     waiting for twice the tables halves those rewrites, and a read
//     consults up to 8 level-0 tables' pinned filters (the 1 M scale
//     run's day 0: 2.2 GB of compaction writes against 4.2, 34 s of
//     compaction against 60; the revisit day's the same);
//   - 8 MiB tables and a 64 MiB compaction base (CompactionTotalSize:
//     goleveldb multiplies it by 10 a level, so level 1 holds 640 MiB):
//     one level fewer for compaction to rewrite the records through;
//   - no block cache (DisableBlockCache): each open table keeps its
//     index and filter blocks with its reader, and data blocks are read
//     when used. Most of a sweep's reads are of new records, which an
//     index block and a filter answer; a 16 MiB cache held a fraction
//     of a 1 M node's index and filter blocks (650 MB of tables,
//     about 12 M keys), and a Put re-read and decoded an index block
//     of 8 MiB of records for many of its keys (BenchmarkIndexPut at 1 M sources, alternated twice:
//     12.8 and 13.2 CPU-µs a record on the revisit day against 16.3
//     and 18.9, day 0 11.8 and 11.9 against 12.1 and 13.3).
//
// The options change no on-disk format: tables written before the
// filter are read as before.
func indexOptions() *opt.Options {
	return &opt.Options{
		Filter:                 filter.NewBloomFilter(10),
		DisableBlockCache:      true,
		WriteBuffer:            32 * opt.MiB,
		CompactionTableSize:    8 * opt.MiB,
		CompactionTotalSize:    64 * opt.MiB,
		CompactionL0Trigger:    8,
		WriteL0SlowdownTrigger: 16,
		WriteL0PauseTrigger:    24,
		DisableSeeksCompaction: true,
	}
}
