package spaweb

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/herod-archive/herod/internal/fidelityweb"
)

//go:embed static
var files embed.FS

// Config says what a Site serves. The zero value means the defaults.
type Config struct {
	// ScrollPages is the number of pages of the infinite-scroll list.
	// Default 4.
	ScrollPages int
	// Addr is the listen address. Default "127.0.0.1:0".
	Addr string
}

// FeedItems is the number of items in each page of the infinite-scroll
// list.
const FeedItems = 6

// Site is a running sample single-page application.
type Site struct {
	cfg    Config
	srv    *http.Server
	ln     net.Listener
	font   []byte
	images sync.Map // name -> []byte

	mu   sync.Mutex
	hits map[string]int // request URI -> requests
}

// New returns a Site for cfg; Start serves it.
func New(cfg Config) *Site {
	if cfg.ScrollPages <= 0 {
		cfg.ScrollPages = 4
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	return &Site{cfg: cfg, hits: map[string]int{}}
}

// Start listens and serves until ctx ends or Close is called. The web
// font is the fidelity site's (fidelityweb.Font).
func (s *Site) Start(ctx context.Context) error {
	s.font = fidelityweb.Font()
	ln, srv, err := fidelityweb.Serve(ctx, s.cfg.Addr, http.HandlerFunc(s.serve))
	if err != nil {
		return fmt.Errorf("spaweb: %w", err)
	}
	s.ln, s.srv = ln, srv
	return nil
}

// Close stops serving.
func (s *Site) Close() error { return s.srv.Close() }

// URL returns the site's base URL, "http://127.0.0.1:port".
func (s *Site) URL() string { return "http://" + s.ln.Addr().String() }

// Pages returns the URLs of the pages the site's HTML or its scripts
// name: the entry point, the routes of the navigation (two of which only
// the script names) and, per page of the list, its items' routes.
func (s *Site) Pages() []string {
	out := []string{s.URL() + "/"}
	for _, n := range navItems {
		out = append(out, s.URL()+n.Href)
	}
	return out
}

// HiddenPages returns the routes only the site's scripts name.
func (s *Site) HiddenPages() []string {
	var out []string
	for _, n := range navItems {
		if strings.HasPrefix(n.Href, "/app/hidden-") {
			out = append(out, s.URL()+n.Href)
		}
	}
	return out
}

// HostileURL returns the URL of a hostile page: "loop" (a script that
// never ends), "endless" (an infinite scroll without end), "flood"
// (1000 fetches of target at once), "download"
// (a page that starts a download at once) or "internal" (a page that
// asks for target by every means it has: an image, a script, fetch, a
// worker's fetch, a WebSocket, a navigation of a frame).
func (s *Site) HostileURL(name, target string) string {
	u := s.URL() + "/hostile/" + name + ".html"
	if target != "" {
		u += "?to=" + url.QueryEscape(target)
	}
	return u
}

// Requests returns how many requests the site has answered, by request
// URI (path and query).
func (s *Site) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.hits)
}

// Reset forgets the requests counted so far.
func (s *Site) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.hits)
}

type navItem struct {
	Href  string `json:"href"`
	Title string `json:"title"`
}

var navItems = []navItem{
	{"/app/home", "Home"},
	{"/app/about", "About"},
	{"/app/hidden-1", "Only a script names this"},
	{"/app/hidden-2", "And this"},
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.RequestURI()]++
	s.mu.Unlock()
	p := r.URL.Path
	h := w.Header()
	switch {
	case p == "/" || strings.HasPrefix(p, "/app/"):
		s.file(w, "static/index.html", "text/html; charset=utf-8")
	case p == "/static/app.js":
		s.file(w, "static/app.js", "text/javascript")
	case p == "/static/app.css":
		s.file(w, "static/app.css", "text/css")
	case p == "/static/spa.ttf":
		h.Set("Content-Type", "font/ttf")
		_, _ = w.Write(s.font)
	case p == "/api/nav.json":
		writeJSON(w, navItems)
	case strings.HasPrefix(p, "/api/page/") && strings.HasSuffix(p, ".json"):
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/api/page/"), ".json")
		writeJSON(w, map[string]string{
			"title": "Page " + name,
			"text":  "This is the " + name + " page, rendered by the script from JSON.",
			"image": "/img/page-" + name + ".png",
		})
	case p == "/api/feed":
		s.feed(w, r, s.cfg.ScrollPages, "/api/feed")
	case p == "/hostile/endless.json":
		s.feed(w, r, -1, "/hostile/endless.json")
	case strings.HasPrefix(p, "/img/") && strings.HasSuffix(p, ".png"):
		h.Set("Content-Type", "image/png")
		_, _ = w.Write(s.image(strings.TrimSuffix(strings.TrimPrefix(p, "/img/"), ".png")))
	case strings.HasPrefix(p, "/hostile/"):
		s.hostile(w, r)
	default:
		http.NotFound(w, r)
	}
}

// feed answers a page of a list: FeedItems items, each a link and an
// image, and the URL of the next page, null after pages pages (never
// when pages < 0).
func (s *Site) feed(w http.ResponseWriter, r *http.Request, pages int, path string) {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 0 || (pages >= 0 && n >= pages) {
		http.NotFound(w, r)
		return
	}
	type item struct {
		Href  string `json:"href"`
		Title string `json:"title"`
		Image string `json:"image"`
	}
	var page struct {
		Items []item  `json:"items"`
		Next  *string `json:"next"`
	}
	for i := range FeedItems {
		k := n*FeedItems + i
		page.Items = append(page.Items, item{
			Href:  fmt.Sprintf("/app/item-%d", k),
			Title: fmt.Sprintf("Item %d", k),
			Image: fmt.Sprintf("/img/item-%d.png", k),
		})
	}
	if pages < 0 || n+1 < pages {
		next := fmt.Sprintf("%s?page=%d", path, n+1)
		page.Next = &next
	}
	writeJSON(w, page)
}

func (s *Site) file(w http.ResponseWriter, name, ctype string) {
	b, err := files.ReadFile(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// image returns a small PNG of one color chosen by name.
func (s *Site) image(name string) []byte {
	if b, ok := s.images.Load(name); ok {
		return b.([]byte)
	}
	f := fnv.New32a()
	f.Write([]byte(name))
	v := f.Sum32()
	img := image.NewRGBA(image.Rect(0, 0, 16, 12))
	c := color.RGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255}
	for y := range 12 {
		for x := range 16 {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	b, _ := s.images.LoadOrStore(name, buf.Bytes())
	return b.([]byte)
}
