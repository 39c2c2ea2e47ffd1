package gwstats

// Stats counts what the gateway answered since it was built, for status
// pages and metrics. Failures of its Archive are logged one by one and
// counted here.
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
