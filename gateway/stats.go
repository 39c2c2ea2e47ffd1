package gateway

import (
	"sync/atomic"
	"time"
)

// Stats counts what the gateway answered since New, for status pages and
// metrics. Failures of the Archive are logged one by one and counted here.
type Stats struct {
	Requests      int64 `json:"requests"`      // every request
	Replays       int64 `json:"replays"`       // captures served by /web/<ts>/<url> on the content origin
	Frames        int64 `json:"frames"`        // framed replay pages served on the UI origin
	Rewritten     int64 `json:"rewritten"`     // of which HTML or CSS was rewritten
	NotFound      int64 `json:"notFound"`      // 404 answers (no capture, no page)
	BadRequests   int64 `json:"badRequests"`   // 400 answers (malformed paths, queries)
	ArchiveErrors int64 `json:"archiveErrors"` // Archive calls that failed, timeouts included
	Timeouts      int64 `json:"timeouts"`      // Archive calls past the deadline
	Exports       int64 `json:"exports"`       // export streams started
	ExportErrors  int64 `json:"exportErrors"`  // export streams that failed
	// Refused counts requests refused for safety: service worker scripts
	// on the content origin, admin requests without the token or from
	// another site, private status asked from elsewhere.
	Refused int64 `json:"refused"`
	// Fuzzy counts replays and banners that served the capture of another
	// URL under the fuzzy rules (FuzzyHeader).
	Fuzzy int64 `json:"fuzzy"`
	// Busy counts 503 answers for load (Limits): requests past
	// MaxInFlight, replies without room in MemoryBudget, exports past
	// MaxExports or a client's slots.
	Busy int64 `json:"busy"`
	// Limited counts 429 answers: requests past their client's
	// Limits.RequestRate.
	Limited int64 `json:"limited"`
	// PacedSeconds is the time export and CDX writers waited for their
	// client's Limits.ExportRate, all together.
	PacedSeconds float64 `json:"pacedSeconds"`
	// Clients is the number of clients whose limits are remembered now
	// (at most Limits.MaxClients idle ones), and ClientsForgotten how
	// many idle ones were forgotten to stay within it.
	Clients          int64 `json:"clients"`
	ClientsForgotten int64 `json:"clientsForgotten"`
	// Stalled counts replies dropped because the reader took nothing
	// within Limits.WriteProgress.
	Stalled int64 `json:"stalled"`
	// Spooled counts reply bodies served from a spool file, and Shared
	// the replies served from another request's spool file.
	Spooled int64 `json:"spooled"`
	Shared  int64 `json:"shared"`
	// Streamed counts reply bodies copied straight from the archive's
	// segment files (Streamer), neither held whole nor spooled.
	Streamed int64 `json:"streamed"`
	// InFlight is the number of requests being handled now, and
	// MemoryHeld the bytes of bodies charged to Limits.MemoryBudget now.
	InFlight   int64 `json:"inFlight"`
	MemoryHeld int64 `json:"memoryHeld"`
}

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
