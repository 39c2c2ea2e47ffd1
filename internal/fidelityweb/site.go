package fidelityweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config says what a Site serves. The zero value means the defaults.
type Config struct {
	// Pages is the number of pages, /p/0.html to /p/<Pages-1>.html.
	// Default 20.
	Pages int
	// Addr is the listen address. Default "127.0.0.1:0".
	Addr string
	// FontFile is a TrueType font served as the site's web font. Default:
	// the first of fontFiles that exists; without one the site serves a
	// few bytes that no browser can use (the font's fallback then renders
	// alike live and replayed).
	FontFile string
}

// fontFiles are system fonts tried for Config.FontFile, chosen to look
// unlike browsers' default fonts.
var fontFiles = []string{
	"/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf",
	"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
	"/usr/share/fonts/truetype/liberation/LiberationMono-Bold.ttf",
}

// Site is a running fidelity sample site.
type Site struct {
	cfg      Config
	srv      *http.Server
	ln       net.Listener
	font     []byte
	images   sync.Map // name -> []byte
	requests atomic.Int64
}

// New returns a Site for cfg; Start serves it.
func New(cfg Config) *Site {
	if cfg.Pages <= 0 {
		cfg.Pages = 20
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	return &Site{cfg: cfg}
}

// Start listens and serves until ctx ends or Close is called.
func (s *Site) Start(ctx context.Context) error {
	files := fontFiles
	if s.cfg.FontFile != "" {
		files = []string{s.cfg.FontFile}
	}
	s.font = Font(files...)
	ln, srv, err := Serve(ctx, s.cfg.Addr, http.HandlerFunc(s.serve))
	if err != nil {
		return fmt.Errorf("fidelityweb: %w", err)
	}
	s.ln, s.srv = ln, srv
	return nil
}

// Font returns the first of files (of the system fonts chosen to look
// unlike browsers' defaults when none is given) that can be read, or a
// few bytes no browser can use as a font.
func Font(files ...string) []byte {
	if len(files) == 0 {
		files = fontFiles
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			return b
		}
	}
	return []byte("not a font")
}

// Serve listens on addr and serves h until ctx ends or the server is
// closed: the test sites' server.
func Serve(ctx context.Context, addr string, h http.Handler) (net.Listener, *http.Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return ln, srv, nil
}

// Close stops serving.
func (s *Site) Close() error { return s.srv.Close() }

// URL returns the site's base URL, "http://127.0.0.1:port".
func (s *Site) URL() string { return "http://" + s.ln.Addr().String() }

// Requests returns how many requests the site has answered.
func (s *Site) Requests() int64 { return s.requests.Load() }

// Pages returns the URLs a benchmark loads: every page, the first page
// by its redirecting URL, the plain-text file and the PDF.
func (s *Site) Pages() []string {
	var out []string
	for i := range s.cfg.Pages {
		out = append(out, fmt.Sprintf("%s/p/%d.html", s.URL(), i))
	}
	return append(out, s.URL()+"/old/1.html", s.URL()+"/docs/notes.txt", s.URL()+"/docs/report.pdf")
}

// Seeds returns the URLs a crawl of the whole site starts from.
func (s *Site) Seeds() []string { return []string{s.URL() + "/p/0.html"} }

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	p := r.URL.Path
	h := w.Header()
	switch {
	case strings.HasPrefix(p, "/p/") && strings.HasSuffix(p, ".html"):
		i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/p/"), ".html"))
		if err != nil || i < 0 || i >= s.cfg.Pages {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, s.page(i))
	case strings.HasPrefix(p, "/old/"):
		http.Redirect(w, r, "/p/"+strings.TrimPrefix(p, "/old/"), http.StatusMovedPermanently)
	case strings.HasPrefix(p, "/api/page-") && strings.HasSuffix(p, ".json"):
		n := strings.TrimSuffix(strings.TrimPrefix(p, "/api/page-"), ".json")
		h.Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"page": %q, "items": ["alpha %[1]s", "beta %[1]s", "gamma %[1]s"]}`, n)
	case p == "/img/moved.png":
		http.Redirect(w, r, "/img/new.png?"+r.URL.RawQuery, http.StatusMovedPermanently)
	case strings.HasPrefix(p, "/img/") && strings.HasSuffix(p, ".png"):
		h.Set("Content-Type", "image/png")
		_, _ = w.Write(s.image(strings.TrimSuffix(strings.TrimPrefix(p, "/img/"), ".png")))
	case p == "/static/font.ttf":
		h.Set("Content-Type", "font/ttf")
		_, _ = w.Write(s.font)
	case p == "/docs/notes.txt":
		h.Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, strings.Repeat("Plain-text notes, archived and replayed as they are.\n", 40))
	case p == "/docs/report.pdf":
		h.Set("Content-Type", "application/pdf")
		_, _ = w.Write(pdf)
	default:
		body, ok := static[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(p, ".css") {
			h.Set("Content-Type", "text/css")
		} else {
			h.Set("Content-Type", "text/javascript")
		}
		fmt.Fprint(w, strings.ReplaceAll(body, "SITE", s.URL()))
	}
}

// image returns a PNG, 240×80, coloured by its name, with a stripe, so
// that a missing or wrong image shows in a screenshot.
func (s *Site) image(name string) []byte {
	if b, ok := s.images.Load(name); ok {
		return b.([]byte)
	}
	var sum uint32
	for _, c := range name {
		sum = sum*31 + uint32(c)
	}
	bg := color.RGBA{uint8(sum), uint8(sum >> 8), uint8(sum >> 16), 255}
	img := image.NewRGBA(image.Rect(0, 0, 240, 80))
	for y := range 80 {
		for x := range 240 {
			c := bg
			if (x/12+y/12)%5 == 0 {
				c = color.RGBA{255 - bg.R, 255 - bg.G, 255 - bg.B, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory RGBA image does not fail
	}
	b, _ := s.images.LoadOrStore(name, buf.Bytes())
	return b.([]byte)
}
