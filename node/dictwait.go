package node

import (
	"cmp"

	"github.com/herod-archive/herod/archive"
)

// dictWait is archive.Options.DictWait for cfg: a node that joins a ring
// (cfg.Join set) waits 32 × DictSamples more records for a member's
// dictionary to adopt before it trains its own, since the ring's first
// store trains at its first DictSamples records and its copies reach the
// others. On a loaded machine that training takes 12-22 s of wall time
// and the first copies of records compressed with its result reach the
// other stores 10 s or more later, while a store of a ring crawling at
// full speed takes in 70 records a second (the scale benchmark's 4-node
// ring: with 8 × DictSamples every store trained its own). Waiting costs
// little: the records meanwhile are gzip members (about 26 µs more CPU a
// record than zstd), and a peer's dictionary is adopted as soon as a
// record using it is imported. A node that starts a ring trains at once.
func dictWait(cfg Config) int {
	if len(cfg.Join) == 0 || cfg.DictSamples < 0 {
		return 0
	}
	return 32 * cmp.Or(cfg.DictSamples, archive.DefaultDictSamples)
}
