package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/ringview"
)

// Archive is what the gateway needs from the archive. The node implements it
// by routing each URL to the ring node that owns it. URLs passed in are in
// canonical form (internal/canon).
type Archive interface {
	// Versions returns the versions of url, oldest first; an empty slice
	// (and a nil error) if there are none.
	Versions(ctx context.Context, url string) ([]archive.Version, error)
	// Get returns the newest version of url whose Time is not after t, or,
	// if every version is newer, the oldest one, together with its capture.
	// It returns an error wrapping archive.ErrNotFound if url has none.
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// Lister is implemented by archives that can answer queries across URLs. The
// CDX API needs it for prefix and host matches (it answers 501 without it).
type Lister interface {
	// List returns the versions selected by q, ordered by URL and then by
	// time, at most q.Limit of them when q.Limit > 0. The gateway asks
	// for cdx.MatchDomain only on behalf of the CDX API, and only of an
	// archive that is not a Pager.
	List(ctx context.Context, q cdx.Query) ([]archive.Version, error)
}

// Exporter is implemented by archives that can stream their versions as
// WARC, for the /export endpoint (404 without it).
type Exporter interface {
	// Export writes, to w, one gzip member holding one WARC/1.1 record per
	// version selected by q (q.Limit is ignored), in a stable order of
	// its choosing (herod's archive: host, URL, time), starting after the
	// record whose cursor is resumeAfter; "" starts at the beginning. The
	// Wayback cursor form archive.WaybackCursor(url, t) must be accepted (see
	// ParseCursor). It stops at the first error, which it returns; records
	// already written are complete unless w failed mid-record.
	Export(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string) error
}

// ProgressExporter is an Exporter that also reports, after each record it
// writes, the cursor that resumes after that record. The gateway then sends
// the last one in the Herod-Export-Cursor trailer, so a client can resume
// without reading the WARC records itself.
type ProgressExporter interface {
	Exporter
	ExportProgress(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string, progress func(cursor string)) error
}

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Archive serves versions and captures. Required.
	Archive Archive
	// Status returns the JSON value served at /api/status; nil means the
	// endpoint is absent (404).
	Status func(ctx context.Context) any
	// Ring returns the data for /ring; nil means the page is absent (404).
	Ring func(ctx context.Context) ringview.View
	// Metrics is served at /metrics when non-nil (the node passes promhttp).
	Metrics http.Handler
	// Logger receives request errors; nil discards them.
	Logger *slog.Logger
	// Timeout bounds each request's calls into the Archive, Lister, Status
	// and Ring; zero means 30 seconds. Exports are bounded by the
	// client's connection and the write deadlines (Limits.WriteProgress).
	Timeout time.Duration
	// Now returns the current time, for "latest" requests; nil means
	// time.Now.
	Now func() time.Time

	// UIOrigin is the origin of the archive's own pages (the form, dates,
	// the framed replay page with its banner, ring, status, admin):
	// "http://host:port" (or https), or ":port" for the host name each
	// request came with and this port. Required.
	UIOrigin string
	// ContentOrigin is the origin that serves archived captures, in the
	// same form; it must differ from UIOrigin, so that archived scripts
	// run in an origin of their own. Required.
	ContentOrigin string
	// Frameless serves replays without the UI frame: /web/<ts>/<url> on
	// the UI origin redirects to the content origin, which inserts the
	// banner into the archived document (where the page's scripts can
	// hide it). The default, framed replay, keeps the banner on the UI
	// origin, out of the page's reach.
	Frameless bool
	// AdminToken authorizes the admin endpoints (POST /api/seed): a
	// request must carry "Authorization: Bearer <AdminToken>". Empty
	// disables them. See LoadAdminToken.
	AdminToken string
	// Seed hands URLs to the crawl, for POST /api/seed, and says what
	// became of each (one result per URL, in order); an error means the
	// request as a whole failed. Nil means the endpoint is absent (404).
	Seed func(ctx context.Context, urls []string) ([]SeedResult, error)
	// Provenance, if set, says who vouches for a capture's date (its
	// witnesses): the banner shows it beside the fetcher. Nil: the
	// banner names the fetcher only.
	Provenance func(ctx context.Context, v archive.Version) Provenance
	// Purge removes every capture a peer signed and orders it removed
	// ring-wide, for POST /api/purge (admin token); it returns the
	// versions removed here. Nil means the endpoint is absent (404).
	Purge func(ctx context.Context, peer string) (int, error)
	// Import imports an uploaded WARC, WACZ or ARC file, for POST
	// /api/import (admin token; importadmin.go): it passes each record
	// not imported to emit as it goes and returns the report. Nil means
	// the endpoint is absent (404).
	Import func(ctx context.Context, name string, body io.Reader, emit func(any)) (any, error)
	// PublicStatus serves /api/status, /ring and /metrics to anyone. By
	// default they answer only requests from a loopback address (made
	// to an IP or localhost host name, never from another site, and
	// without a proxy's forwarding header: forwarded.go) and requests
	// carrying the admin token.
	PublicStatus bool
	// Limits bound requests in flight, memory, write stalls and exports;
	// the zero value means the defaults (see Limits).
	Limits Limits
	// Access, if set, decides what readers see of each capture, on
	// every surface (access.go), and serves /api/access (admin token).
	Access AccessControl
	// Robots, if set, is the replay policy that honours each site's
	// current robots.txt (herod run --replay-robots): a capture whose
	// URL it disallows is blocked like an access rule's (403, a page
	// that says why), on every surface (robots.go). Nil: robots.txt is
	// not consulted at replay.
	Robots RobotsPolicy
	// Search, if set, is the full-text index /search asks (search.go).
	Search SearchIndex
	// LinkIndex, if set, answers /links and /api/rank and adds the pages
	// linking to a URL to its calendar (links.go). Nil: those are absent.
	LinkIndex LinkIndex
}

// ErrNoArchive is returned by New when Config.Archive is nil.
var ErrNoArchive = errors.New("gateway: no archive configured")

// DefaultTimeout is the deadline of Archive calls when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Server is the gateway's http.Handler. Create it with New and serve it as
// the Handler of an http.Server (not behind http.ServeMux; see the package
// documentation).
type Server struct {
	cfg     Config
	ui      originSpec
	content originSpec
	log     *slog.Logger
	list    Lister   // cfg.Archive as a Lister, or nil
	exp     Exporter // cfg.Archive as an Exporter, or nil
	stats   counters
	lim     Limits   // cfg.Limits with the defaults
	flight  inFlight // requests in flight
	mem     *budget  // bytes of bodies held (Limits.MemoryBudget)
	fetches *budget  // Archive.Get calls in flight (Limits.MaxFetches)
	// smallFetches are the Get calls of URLs hinted small (hints.go).
	smallFetches *budget
	hints        sizeHints
	rewrites     urlSet  // URLs whose captures the gateway rewrites (stream.go)
	exports      *budget // exports in flight (Limits.MaxExports); nil: no limit
	clients      *clientLimits
	replies      replies // large replies shared by concurrent readers
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Archive == nil {
		return nil, ErrNoArchive
	}
	ui, err := parseOrigin(cfg.UIOrigin)
	if err != nil {
		return nil, fmt.Errorf("UIOrigin: %w", err)
	}
	content, err := parseOrigin(cfg.ContentOrigin)
	if err != nil {
		return nil, fmt.Errorf("ContentOrigin: %w", err)
	}
	if ui == content {
		return nil, fmt.Errorf("%w: UIOrigin and ContentOrigin are both %q", ErrOrigin, cfg.UIOrigin)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, ui: ui, content: content, log: cfg.Logger, lim: cfg.Limits.withDefaults()}
	s.flight.max = int64(s.lim.MaxInFlight)
	s.mem = newBudget(s.lim.MemoryBudget)
	s.fetches = newBudget(int64(s.lim.MaxFetches))
	s.smallFetches = newBudget(int64(smallSlotsPerFetch * s.lim.MaxFetches))
	if s.lim.MaxExports > 0 {
		s.exports = newBudget(int64(s.lim.MaxExports))
	}
	s.clients = newClientLimits(s.lim)
	s.replies.m = make(map[replyKey]*reply)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.list, _ = cfg.Archive.(Lister)
	s.exp, _ = cfg.Archive.(Exporter)
	s.guardAccess() // access.go
	return s, nil
}

// ctx returns the request's context bounded by the configured timeout.
func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.Timeout)
}

// archiveError answers a failed Archive call: 404 for ErrNotFound, 504 for
// a deadline, 502 otherwise (the owner node could not answer).
func (s *Server) archiveError(w http.ResponseWriter, r *http.Request, url string, err error) {
	switch {
	case s.blockedPage(w, r, err): // access.go
	case errors.Is(err, archive.ErrNotFound):
		s.notArchived(w, r, url)
	case errors.Is(err, context.DeadlineExceeded):
		s.stats.archiveErrors.Add(1)
		s.stats.timeouts.Add(1)
		s.log.Warn("gateway: archive timeout", "url", url, "err", err)
		s.errorPage(w, r, http.StatusGatewayTimeout, "The node that keeps this URL did not answer in time. Try again.", url)
	case errors.Is(err, context.Canceled):
		// The client went away; answer briefly in case anyone listens.
		http.Error(w, "gateway: request cancelled", http.StatusServiceUnavailable)
	default:
		s.stats.archiveErrors.Add(1)
		s.log.Warn("gateway: archive error", "url", url, "err", err)
		s.errorPage(w, r, http.StatusBadGateway, "The archive could not answer: "+err.Error(), url)
	}
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	writeJSON(w, s.log, s.cfg.Status(ctx))
}
