package node

import (
	"cmp"

	"github.com/herod-archive/herod/archive"
)

// dictWait is archive.Options.DictWait for cfg: a node that joins a ring
// (cfg.Join set) waits 8 × DictSamples more records for a member's
// dictionary to adopt before it trains its own, since the ring's first
// store trains at its first DictSamples records and its copies reach the
// others. Training takes 8-15 s of wall time on a loaded machine, during
// which a joiner of a forming ring stores about 1,500 records (its own
// and its copies; with twice DictSamples, 3 of 4 stores of a forming ring
// still trained). A node that starts a ring trains at once.
func dictWait(cfg Config) int {
	if len(cfg.Join) == 0 || cfg.DictSamples < 0 {
		return 0
	}
	return 8 * cmp.Or(cfg.DictSamples, archive.DefaultDictSamples)
}
