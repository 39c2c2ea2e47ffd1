package gateway

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Limits bound what one gateway spends on its readers: requests in flight,
// memory of bodies being prepared, how long a reader may stall a write,
// and what exports cost. A zero field means its documented default; a
// negative one (where allowed) means no limit.
type Limits struct {
	// MaxInFlight is the most requests the gateway handles at once, slow
	// readers included; past it a request is answered 503 with
	// Retry-After at once. Zero means DefaultMaxInFlight, negative no
	// limit. /api/status, /status and /metrics are never refused by it.
	MaxInFlight int
	// MemoryBudget bounds the bytes of capture bodies the gateway holds
	// while it prepares replies (a body is charged three times its size:
	// the capture, its decoding and its rewriting). A reply that cannot
	// get its share within BusyWait is answered 503 with Retry-After.
	// Zero means DefaultMemoryBudget.
	MemoryBudget int64
	// MaxFetches is the most Archive.Get calls in flight at once: the
	// size of a capture is known only once it is read, so these are the
	// bodies not yet charged to MemoryBudget. Zero means
	// DefaultMaxFetches.
	MaxFetches int
	// BusyWait is how long a request waits for a fetch slot or its share
	// of MemoryBudget before it is answered 503. Zero means
	// DefaultBusyWait.
	BusyWait time.Duration
	// WriteProgress is the write deadline of each piece (at most
	// writeChunk bytes) of every reply: a reader that takes none of it
	// within WriteProgress is dropped, one that keeps reading, however
	// slowly, gets the whole reply. Zero means DefaultWriteProgress.
	WriteProgress time.Duration
	// SpoolDir holds large reply bodies while slow readers take them
	// (files removed as soon as they are opened); "" means the system's
	// temporary directory. Replies of at least SpoolThreshold bytes are
	// written there and served from the file, so a reader holds no
	// memory of the gateway, only an open file.
	SpoolDir string
	// SpoolThreshold is the smallest reply body spooled to SpoolDir.
	// Zero means DefaultSpoolThreshold; negative never spools.
	SpoolThreshold int64
	// MaxExports is the most /export streams at once, all clients
	// together. Zero means DefaultMaxExports, negative no limit.
	MaxExports int
	// ClientSlots is the most /export and /cdx requests one client (one
	// remote address) has in flight at once. Zero means
	// DefaultClientSlots, negative no limit.
	ClientSlots int
	// ExportRate is the bytes per second one client receives from its
	// exports and CDX answers, all together: they are paced to it, never
	// refused. Zero means DefaultExportRate, negative no limit.
	ExportRate int64
	// RequestRate is the requests per second one client (a remote
	// address; clients.go) may make, on either origin, after a burst of
	// RequestBurst; past it a request is answered 429 with Retry-After.
	// Requests from the node's own machine (loopback, not relayed) and
	// the exempt status pages are never counted. Zero or negative means
	// no limit.
	RequestRate float64
	// RequestBurst is the requests a client may make at once before
	// RequestRate applies (a framed page with its images and scripts
	// is some dozens). Zero means DefaultRequestBurst.
	RequestBurst int
	// MaxClients is the most idle clients whose buckets are remembered
	// (least recently seen forgotten first); clients with requests in
	// flight are always kept. Zero means DefaultMaxClients.
	MaxClients int
	// MaxWACZRecords bounds the records of one format=wacz export: a
	// WACZ's index and page list are written at its end, so they are held
	// in memory (some hundred bytes per record) until then; past it the
	// export stops with an error that says to export WARC or a narrower
	// selection. Only applied to a ProgressExporter. Zero means
	// DefaultMaxWACZRecords, negative no limit.
	MaxWACZRecords int
}

// Defaults of Limits.
const (
	DefaultMaxInFlight    = 256
	DefaultMemoryBudget   = 64 << 20
	DefaultMaxFetches     = 2
	DefaultBusyWait       = 5 * time.Second
	DefaultWriteProgress  = 30 * time.Second
	DefaultSpoolThreshold = 256 << 10
	DefaultMaxExports     = 8
	DefaultClientSlots    = 2
	DefaultExportRate     = 4_000_000
	DefaultMaxWACZRecords = 20_000
	DefaultRequestBurst   = 200
	DefaultMaxClients     = 10_000
)

// withDefaults returns l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MemoryBudget <= 0 {
		l.MemoryBudget = DefaultMemoryBudget
	}
	if l.MaxFetches <= 0 {
		l.MaxFetches = DefaultMaxFetches
	}
	if l.BusyWait <= 0 {
		l.BusyWait = DefaultBusyWait
	}
	if l.WriteProgress <= 0 {
		l.WriteProgress = DefaultWriteProgress
	}
	if l.SpoolThreshold == 0 {
		l.SpoolThreshold = DefaultSpoolThreshold
	}
	if l.MaxExports == 0 {
		l.MaxExports = DefaultMaxExports
	}
	if l.ClientSlots == 0 {
		l.ClientSlots = DefaultClientSlots
	}
	if l.ExportRate == 0 {
		l.ExportRate = DefaultExportRate
	}
	if l.MaxWACZRecords == 0 {
		l.MaxWACZRecords = DefaultMaxWACZRecords
	}
	if l.RequestBurst <= 0 {
		l.RequestBurst = DefaultRequestBurst
	}
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxClients
	}
	return l
}

// retryAfter is the Retry-After, in seconds, of a 503 for a busy gateway.
const retryAfter = 2

// busy answers a request the gateway has no room for: 503 with
// Retry-After, a short text, nothing that costs memory.
func (s *Server) busy(w http.ResponseWriter, r *http.Request, why string) {
	s.stats.busy.Add(1)
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(retryAfter))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	writeBody(w, r, http.StatusServiceUnavailable, []byte("gateway: busy ("+why+"), try again in a moment\n"))
}

// inFlight counts requests being handled, against Limits.MaxInFlight.
type inFlight struct {
	n   atomic.Int64
	max int64 // <= 0: no limit
}

// enter takes a place, or reports false when there is none.
func (f *inFlight) enter() bool {
	if n := f.n.Add(1); f.max > 0 && n > f.max {
		f.n.Add(-1)
		return false
	}
	return true
}

func (f *inFlight) leave() { f.n.Add(-1) }

// exempt reports whether a request to the UI origin is never refused for
// load: the operator's status and metrics, which say why the node is busy.
func exempt(r *http.Request) bool {
	p := r.URL.Path
	return p == "/api/status" || p == "/status" || p == "/metrics"
}

// limited wraps a handler of one origin: it refuses requests past their
// client's RequestRate (429) and past MaxInFlight (503), and gives every
// reply a progress write deadline.
func (s *Server) limited(next func(http.ResponseWriter, *http.Request), ui bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		dw := newDeadlineWriter(w, s.lim.WriteProgress, s.cfg.Timeout, &s.stats.stalled)
		if !(ui && exempt(r)) {
			if !local(r) {
				if ok, wait := s.clients.allow(clientKey(r)); !ok {
					s.stats.requests.Add(1)
					s.tooMany(dw, r, wait)
					return
				}
			}
			if !s.flight.enter() {
				s.stats.requests.Add(1)
				s.busy(dw, r, "too many requests in flight")
				return
			}
			defer s.flight.leave()
		}
		next(dw, r)
	}
}
