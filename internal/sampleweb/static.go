package sampleweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// static.go is the benchmark mode: a one-host site with nothing but pages,
// images, stylesheets and scripts (no 404s, redirects, robots exclusions or
// dynamic URLs, and only relative or root-relative links, so its bytes do
// not depend on the address it is served from), written to disk so that
// wget and herod crawl the very same files.

// ErrNotLoopback is returned by StaticServer.Start for a non-loopback address.
var ErrNotLoopback = errors.New("sampleweb: address is not loopback")

func staticModel(pages int, seed int64) *model {
	if seed == 0 {
		seed = 1
	}
	return newModel(seed, 1, max(pages, 2), 1, true)
}

// StaticSitePaths returns the sorted root-relative paths ("/", "/news/6.html",
// "/img/3.gif", ...) of every file a crawler reaches from "/" in the static
// site of pages HTML pages and seed; robots.txt, also written, is not
// included. Every path answers 200.
func StaticSitePaths(pages int, seed int64) []string {
	return urls(staticModel(pages, seed).reach(0, false), []string{""})
}

// WriteStaticSite writes the static site of pages HTML pages (at least 2)
// and seed to dir, creating it if needed: "/" as index.html, every other
// path as the file of that name, plus robots.txt allowing everything. The
// same (pages, seed) always give the same bytes.
func WriteStaticSite(dir string, pages int, seed int64) error {
	m := staticModel(pages, seed)
	paths := append(urls(m.reach(0, false), []string{""}), "/robots.txt")
	made := make(map[string]bool)
	for _, p := range paths {
		res := m.lookup(0, p, "", 0, []string{""}, true)
		if res.status != http.StatusOK {
			return fmt.Errorf("sampleweb static: %s answers %d", p, res.status)
		}
		name := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
		if strings.HasSuffix(p, "/") {
			name = filepath.Join(name, "index.html")
		}
		if d := filepath.Dir(name); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("sampleweb static: %w", err)
			}
			made[d] = true
		}
		if err := os.WriteFile(name, res.body, 0o644); err != nil {
			return fmt.Errorf("sampleweb static: %w", err)
		}
	}
	return nil
}

// StaticConfig configures a StaticServer.
type StaticConfig struct {
	Dir    string       // directory to serve, as written by WriteStaticSite
	Addr   string       // loopback host:port; default "127.0.0.1:0" (an OS-chosen port)
	Logger *slog.Logger // nil discards logs
}

// StaticServer serves a directory over HTTP on loopback with net/http's
// file server: Content-Type from the extension, Last-Modified from the
// file's modification time, If-Modified-Since answered with 304.
type StaticServer struct {
	cfg    StaticConfig
	log    *slog.Logger
	served atomic.Int64

	mu  sync.Mutex
	srv *http.Server
	url string
}

// NewStaticServer returns a server for cfg.Dir; Start serves it.
func NewStaticServer(cfg StaticConfig) *StaticServer {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &StaticServer{cfg: cfg, log: log}
}

// Start listens on cfg.Addr, which must be a loopback address, and serves
// until Close.
func (s *StaticServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return ErrStarted
	}
	host, _, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("sampleweb static start: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("sampleweb static start: %w: %q", ErrNotLoopback, s.cfg.Addr)
	}
	if st, err := os.Stat(s.cfg.Dir); err != nil || !st.IsDir() {
		return fmt.Errorf("sampleweb static start: %q is not a directory: %v", s.cfg.Dir, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("sampleweb static start: %w", err)
	}
	files := http.FileServer(http.Dir(s.cfg.Dir))
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.served.Add(1)
			files.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.url = "http://" + ln.Addr().String() + "/"
	srv := s.srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("static site stopped", "err", err)
		}
	}()
	s.log.Info("static site serving", "dir", s.cfg.Dir, "url", s.url)
	return nil
}

// URL returns the site's root URL, e.g. "http://127.0.0.1:41234/"; empty
// before Start.
func (s *StaticServer) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Served returns the number of requests answered since Start.
func (s *StaticServer) Served() int64 { return s.served.Load() }

// Close stops the server. It is safe to call more than once.
func (s *StaticServer) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Close(); err != nil {
		return fmt.Errorf("sampleweb static close: %w", err)
	}
	return nil
}
