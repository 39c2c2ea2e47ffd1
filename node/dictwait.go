package node

import (
	"cmp"

	"github.com/herod-archive/herod/archive"
)

// dictWait is archive.Options.DictWait for cfg: a node that joins a ring
// (cfg.Join set) waits twice DictSamples more records for a member's
// dictionary to adopt before it trains its own, since the ring's first
// store trains at its first DictSamples records and its copies reach the
// others; a node that starts a ring trains at once.
func dictWait(cfg Config) int {
	if len(cfg.Join) == 0 || cfg.DictSamples < 0 {
		return 0
	}
	return 2 * cmp.Or(cfg.DictSamples, archive.DefaultDictSamples)
}
