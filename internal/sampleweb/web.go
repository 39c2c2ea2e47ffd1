package sampleweb

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Start.
var (
	ErrStarted  = errors.New("sampleweb: already started")
	ErrTooLarge = errors.New("sampleweb: too many hosts")
)

// MaxHosts is the largest Config.Hosts: host i listens on 127.0.0.(i+2).
const MaxHosts = 250

// Config describes a sample web. Zero values mean the documented defaults.
type Config struct {
	Hosts int   // number of hosts, default 3; host i listens on 127.0.0.(i+2)
	Pages int   // HTML pages across all hosts on day 0, default 600 (at least 2 per host)
	Seed  int64 // default 1; everything served is a pure function of (Seed, day, host addresses)
	// Port is the port every host listens on; 0 lets the OS choose one per host.
	Port int
	// NewPagesPerDay is how many pages each host gains every day after day 0;
	// default 2.
	NewPagesPerDay int
	// Epoch is the Last-Modified date of day 0; day d is Epoch + d×24h.
	// Default 2024-01-01T00:00:00Z.
	Epoch time.Time
	// CrawlDelay, when positive, adds "Crawl-delay: CrawlDelay" (seconds)
	// to the robots.txt group for all agents.
	CrawlDelay int
	// RobotsStatus, when 400-599, makes every robots.txt answer that status
	// instead of 200; Reachable then follows RFC 9309: 4xx allows every path
	// (the /private/ pages become reachable), 5xx disallows every path (no
	// URL is reachable). Other values mean 200.
	RobotsStatus int
	// MaxRequests bounds the request log kept for Requests, so a long demo
	// does not grow without limit: when it is exceeded the oldest half is
	// dropped. Default 200,000; negative disables the log.
	MaxRequests int
	Logger      *slog.Logger // nil discards logs
}

// Request is one request the web served.
type Request struct {
	Time        time.Time
	Host        string // host:port of the listener that answered, as in Seeds
	Path        string // path and query as requested
	Method      string
	UserAgent   string
	From        string
	Conditional bool // the request carried If-None-Match or If-Modified-Since
	Status      int
}

// Web is a running (or startable) sample web. All methods are safe for
// concurrent use.
type Web struct {
	cfg Config
	m   *model
	log *slog.Logger
	day atomic.Int64

	mu      sync.Mutex
	bases   []string       // "http://127.0.0.2:41234", by host
	hostOf  map[string]int // "127.0.0.2:41234" -> host
	servers []*http.Server
	reqs    []Request
	reached map[reachKey][]string
	union   *knownSet
}

type reachKey struct {
	day     int
	dynamic bool
}

// New returns a sample web described by cfg; Start serves it.
func New(cfg Config) *Web {
	if cfg.Hosts <= 0 {
		cfg.Hosts = 3
	}
	if cfg.Pages <= 0 {
		cfg.Pages = 600
	}
	cfg.Pages = max(cfg.Pages, 2*cfg.Hosts)
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.NewPagesPerDay <= 0 {
		cfg.NewPagesPerDay = 2
	}
	if cfg.MaxRequests == 0 {
		cfg.MaxRequests = 200_000
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := newModel(cfg.Seed, cfg.Hosts, cfg.Pages, cfg.NewPagesPerDay, false)
	m.crawlDelay, m.robotsStatus = cfg.CrawlDelay, cfg.RobotsStatus
	return &Web{
		cfg:     cfg,
		m:       m,
		log:     log,
		reached: make(map[reachKey][]string),
	}
}

// Start listens on 127.0.0.(i+2) for every host i and serves until Close.
// ctx bounds only the listening, not the serving.
func (w *Web) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.servers != nil {
		return ErrStarted
	}
	if w.cfg.Hosts > MaxHosts {
		return fmt.Errorf("sampleweb start: %w: %d > %d", ErrTooLarge, w.cfg.Hosts, MaxHosts)
	}
	var lc net.ListenConfig
	lns := make([]net.Listener, 0, w.cfg.Hosts)
	for h := range w.cfg.Hosts {
		addr := net.JoinHostPort("127.0.0."+strconv.Itoa(h+2), strconv.Itoa(w.cfg.Port))
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("sampleweb start: %w", err)
		}
		lns = append(lns, ln)
	}
	w.hostOf = make(map[string]int, len(lns))
	for h, ln := range lns {
		hp := ln.Addr().String()
		w.bases = append(w.bases, "http://"+hp)
		w.hostOf[hp] = h
	}
	for h, ln := range lns {
		srv := &http.Server{
			Handler:           w.handler(h),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(w.log.Handler(), slog.LevelDebug),
		}
		w.servers = append(w.servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				w.log.Warn("sample web host stopped", "host", h, "err", err)
			}
		}()
	}
	w.log.Info("sample web started", "hosts", w.cfg.Hosts, "pages", w.cfg.Pages, "seeds", w.bases)
	return nil
}

// Close stops every host. It is safe to call more than once.
func (w *Web) Close() error {
	w.mu.Lock()
	servers := w.servers
	w.servers = []*http.Server{}
	w.mu.Unlock()
	var errs []error
	for _, s := range servers {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sampleweb close: %w", err)
	}
	return nil
}

// Seeds returns the canonical root URL of every host, in host order, e.g.
// "http://127.0.0.2:41234/". It is nil before Start.
func (w *Web) Seeds() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.bases))
	for _, b := range w.bases {
		out = append(out, b+"/")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// SetDay makes the web serve day d (negative d counts as 0). Requests in
// flight finish with the day they started with.
func (w *Web) SetDay(d int) { w.day.Store(int64(max(d, 0))) }

// Day returns the day being served.
func (w *Web) Day() int { return int(w.day.Load()) }

// LastModified returns the Last-Modified time the web sends for a body
// that last changed on day d.
func (w *Web) LastModified(d int) time.Time {
	return w.cfg.Epoch.Add(time.Duration(d) * 24 * time.Hour)
}

// Requests returns a copy of every request served since Start or the last
// ResetRequests (up to Config.MaxRequests of the latest), in the order
// they completed.
func (w *Web) Requests() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Request(nil), w.reqs...)
}

// ResetRequests forgets the recorded requests.
func (w *Web) ResetRequests() {
	w.mu.Lock()
	w.reqs = nil
	w.mu.Unlock()
}

func (w *Web) basesCopy() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bases...)
}

// locate maps a URL of this web to its host and path with query.
func (w *Web) locate(raw string) (loc, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return loc{}, false
	}
	w.mu.Lock()
	h, ok := w.hostOf[u.Host]
	w.mu.Unlock()
	if !ok {
		return loc{}, false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return loc{h, p}, true
}

// Status returns the HTTP status the web answers for rawURL on day d: 200,
// 301 or 404; 0 if the URL is not on this web (or before Start).
func (w *Web) Status(day int, rawURL string) int {
	l, ok := w.locate(rawURL)
	if !ok {
		return 0
	}
	path, query := splitQuery(l.pathq)
	return w.m.lookup(l.h, path, query, max(day, 0), nil, false).status
}

// Body returns the status and the exact body the web serves for rawURL on
// day d, without a request; status 0 if the URL is not on this web.
func (w *Web) Body(day int, rawURL string) (int, []byte) {
	l, ok := w.locate(rawURL)
	if !ok {
		return 0, nil
	}
	path, query := splitQuery(l.pathq)
	res := w.m.lookup(l.h, path, query, max(day, 0), w.basesCopy(), true)
	return res.status, res.body
}

// etag is the strong entity tag of body.
func etag(body []byte) string {
	sum := sha1.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}
