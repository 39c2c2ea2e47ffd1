package gateway

import (
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/gwstats"
)

// Stats counts what the gateway answered since New (gwstats.Stats: the
// type lives below the gateway, for status packages to carry it).
type Stats = gwstats.Stats

// counters is the live, atomically updated form of Stats.
type counters struct {
	requests, replays, rewritten, notFound, badRequests atomic.Int64
	archiveErrors, timeouts, exports, exportErrors      atomic.Int64
	refused, frames, fuzzy                              atomic.Int64
	busy, stalled, spooled, shared, streamed            atomic.Int64
}

// Stats returns a snapshot of the counters. It is safe to call at any time.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		Requests:         c.requests.Load(),
		Replays:          c.replays.Load(),
		Frames:           c.frames.Load(),
		Rewritten:        c.rewritten.Load(),
		NotFound:         c.notFound.Load(),
		BadRequests:      c.badRequests.Load(),
		ArchiveErrors:    c.archiveErrors.Load(),
		Timeouts:         c.timeouts.Load(),
		Exports:          c.exports.Load(),
		ExportErrors:     c.exportErrors.Load(),
		Refused:          c.refused.Load(),
		Fuzzy:            c.fuzzy.Load(),
		Busy:             c.busy.Load(),
		Stalled:          c.stalled.Load(),
		Limited:          s.clients.limited.Load(),
		PacedSeconds:     time.Duration(s.clients.paced.Load()).Seconds(),
		Clients:          int64(s.clients.size()),
		ClientsForgotten: s.clients.evicted.Load(),
		Spooled:          c.spooled.Load(),
		Shared:           c.shared.Load(),
		Streamed:         c.streamed.Load(),
		InFlight:         s.flight.n.Load(),
		MemoryHeld:       s.mem.inUse(),
	}
}

// countStatus counts an error answer by its status code.
func (s *Server) countStatus(status int) {
	switch status {
	case 400:
		s.stats.badRequests.Add(1)
	case 404:
		s.stats.notFound.Add(1)
	}
}
