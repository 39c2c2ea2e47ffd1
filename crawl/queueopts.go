package crawl

import (
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// queueOptions returns the goleveldb options of the queue database
// (docs/scale-flat.md). At a million URLs it holds a
// million known URLs and, at a rollover, a million queue entries more;
// every link a page carries is a point read of the known set, and a new
// day writes its whole queue in a few minutes:
//
//   - a bloom filter of 10 bits a key lets a Get skip the tables of the
//     levels that lack the key (the seen test reads one table a level);
//   - a 16 MiB block cache (default 8) keeps the filters and more of the
//     known set in memory;
//   - an 8 MiB write buffer (default 4) and 4 MiB tables make half as many
//     level-0 flushes while a day is staged;
//   - writes slow down at 16 level-0 tables and pause at 32 (default 8
//     and 12): staging writes faster than compaction merges in bursts,
//     and a paused write holds up every add of a link behind it, where
//     more level-0 tables only cost the reads their (filtered) lookups;
//   - CompactionTotalSize 32 MiB (default 10; goleveldb multiplies it by
//     10 per level: level 1 holds 320 MiB) is one level fewer for compaction to
//     rewrite the known set through;
//   - no seek compactions (DisableSeeksCompaction): the seen test's Gets
//     would otherwise make goleveldb rewrite a table for being read past.
//
// The options change no on-disk format.
func queueOptions() *opt.Options {
	return &opt.Options{
		Filter:                 filter.NewBloomFilter(10),
		BlockCacheCapacity:     16 * opt.MiB,
		WriteBuffer:            8 * opt.MiB,
		CompactionTableSize:    4 * opt.MiB,
		CompactionTotalSize:    32 * opt.MiB,
		WriteL0SlowdownTrigger: 16,
		WriteL0PauseTrigger:    32,
		DisableSeeksCompaction: true,
	}
}

// DBStats fills st with the queue database's goleveldb statistics: its
// level sizes and, since it was opened, the bytes compactions read and
// wrote per level (the scale benchmark's per-database table,
// docs/scale-storage.md).
func (c *Crawler) DBStats(st *leveldb.DBStats) error { return c.q.db.Stats(st) }
