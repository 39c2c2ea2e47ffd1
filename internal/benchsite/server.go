package benchsite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// Sentinel errors.
var (
	ErrNotLoopback = errors.New("benchsite: address is not loopback")
	ErrStarted     = errors.New("benchsite: already started")
)

// StallThreshold is the shortest wait between requests that Record counts
// as a stall: a crawler that lets the server wait this long has stopped
// fetching for a while, not just paused between two requests.
const StallThreshold = 100 * time.Millisecond

// robotsPath is left out of Record.Paths: crawlers differ in whether and
// how often they fetch it.
const robotsPath = "/robots.txt"

// Config configures a Server.
type Config struct {
	Dir    string       // directory to serve (required)
	Addr   string       // loopback host:port; default "127.0.0.1:0" (an OS-chosen port)
	Logger *slog.Logger // nil discards logs
}

// Server is a recording file server; see the package documentation.
type Server struct {
	cfg   Config
	log   *slog.Logger
	files http.Handler
	now   func() time.Time // time.Now; tests replace it

	mu       sync.Mutex
	srv      *http.Server
	url      string
	status   map[string]int // path -> status of its last answer
	hits     map[string]int // path -> requests
	ok       int            // paths answered 200, robots.txt aside
	reqs     int
	inflight int
	idleFrom time.Time // when inflight last dropped to 0
	idle     time.Duration
	stalls   int
}

// New returns a server for cfg; Start serves it.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, files: http.FileServer(http.Dir(cfg.Dir)), now: time.Now}
	s.resetLocked()
	return s
}

// Start listens on cfg.Addr, which must be a loopback address, and serves
// cfg.Dir until Close.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return ErrStarted
	}
	host, _, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("benchsite start: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("benchsite start: %w: %q", ErrNotLoopback, s.cfg.Addr)
	}
	if st, err := os.Stat(s.cfg.Dir); err != nil || !st.IsDir() {
		return fmt.Errorf("benchsite start: %q is not a directory", s.cfg.Dir)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("benchsite start: %w", err)
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.url = "http://" + ln.Addr().String() + "/"
	srv := s.srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("benchsite stopped", "err", err)
		}
	}()
	return nil
}

// URL returns the site's root URL, e.g. "http://127.0.0.1:41234/"; empty
// before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops the server. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Close(); err != nil {
		return fmt.Errorf("benchsite close: %w", err)
	}
	return nil
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.inflight == 0 && !s.idleFrom.IsZero() {
		gap := s.now().Sub(s.idleFrom)
		s.idle += gap
		if gap >= StallThreshold {
			s.stalls++
		}
	}
	s.inflight++
	s.mu.Unlock()

	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	s.files.ServeHTTP(sw, r)

	p := r.URL.Path
	s.mu.Lock()
	defer s.mu.Unlock()
	if sw.code == http.StatusOK && s.status[p] != http.StatusOK && p != robotsPath {
		s.ok++
	}
	s.status[p] = sw.code
	s.hits[p]++
	s.reqs++
	s.inflight--
	if s.inflight == 0 {
		s.idleFrom = s.now()
	}
}

// Reset forgets every request answered so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

func (s *Server) resetLocked() {
	s.status, s.hits = map[string]int{}, map[string]int{}
	s.ok, s.reqs = 0, 0
	s.idleFrom, s.idle, s.stalls = time.Time{}, 0, 0
}

// Distinct returns the number of paths answered 200 since Reset,
// robots.txt aside; it is cheap enough to poll.
func (s *Server) Distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok
}

// Record is what a Server answered since Reset.
type Record struct {
	Paths    []string      // paths answered 200, robots.txt aside, sorted
	Requests int           // requests answered, robots.txt and errors included
	Repeated []string      // paths requested more than once ("/a.html x2"), robots.txt aside, sorted
	Idle     time.Duration // time with no request in flight, between the first and the last request
	Stalls   int           // idle gaps of StallThreshold or more
}

// Record returns what the server answered since Reset.
func (s *Server) Record() Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := Record{Requests: s.reqs, Idle: s.idle, Stalls: s.stalls}
	for p, code := range s.status {
		if code == http.StatusOK && p != robotsPath {
			rec.Paths = append(rec.Paths, p)
		}
	}
	for p, n := range s.hits {
		if n > 1 && p != robotsPath {
			rec.Repeated = append(rec.Repeated, fmt.Sprintf("%s x%d", p, n))
		}
	}
	slices.Sort(rec.Paths)
	slices.Sort(rec.Repeated)
	return rec
}
