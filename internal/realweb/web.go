package realweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxHosts is the largest Config.Hosts: host i listens on 127.0.0.(i+2).
const MaxHosts = 250

// Defaults of Config's zero fields.
const (
	DefaultHosts = 220
	DefaultPages = 20
	// MinDelay and MaxDelay bound the wait before a response's headers.
	MinDelay = 20 * time.Millisecond
	MaxDelay = 80 * time.Millisecond
	// SlowEvery: one page in SlowEvery trickles its body over SlowBody.
	SlowEvery = 25
	SlowBody  = time.Second
	// LargeSize is the size of each host's /img/big.png.
	LargeSize = 3 << 19
	// images is the number of small images per host.
	images = 3
)

// ErrTooManyHosts is returned by Start for Config.Hosts over MaxHosts.
var ErrTooManyHosts = errors.New("realweb: too many hosts")

// Config describes a web; zero fields mean the defaults.
type Config struct {
	Hosts int // default DefaultHosts
	Pages int // HTML pages per host, default DefaultPages (at least 6)
	// NoDelay serves without the added latency and trickling (a check of
	// the benchmark itself, not a realistic web).
	NoDelay bool
	Logger  *slog.Logger // nil discards
}

func (cfg Config) withDefaults() Config {
	if cfg.Hosts <= 0 {
		cfg.Hosts = DefaultHosts
	}
	if cfg.Pages <= 0 {
		cfg.Pages = DefaultPages
	}
	cfg.Pages = max(cfg.Pages, 6)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// ObjectsPerHost is the number of URLs a complete crawl fetches from each
// host, robots.txt aside: the root, the pages, the stylesheet, the images
// and the large one.
func (cfg Config) ObjectsPerHost() int {
	return 1 + cfg.withDefaults().Pages + 1 + images + 1
}

// Objects is the number of URLs a complete crawl fetches, robots.txt aside.
func (cfg Config) Objects() int { return cfg.withDefaults().Hosts * cfg.ObjectsPerHost() }

// Web is a running web.
type Web struct {
	cfg     Config
	bases   []string
	servers []*http.Server
}

// Start listens on 127.0.0.(i+2), an ephemeral port, for every host i and
// serves until Close.
func Start(ctx context.Context, cfg Config) (*Web, error) {
	cfg = cfg.withDefaults()
	if cfg.Hosts > MaxHosts {
		return nil, fmt.Errorf("realweb start: %w: %d > %d", ErrTooManyHosts, cfg.Hosts, MaxHosts)
	}
	w := &Web{cfg: cfg}
	var lc net.ListenConfig
	var lns []net.Listener
	for h := range cfg.Hosts {
		ln, err := lc.Listen(ctx, "tcp", "127.0.0."+strconv.Itoa(h+2)+":0")
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("realweb start: %w", err)
		}
		lns = append(lns, ln)
		w.bases = append(w.bases, "http://"+ln.Addr().String())
	}
	for h, ln := range lns {
		srv := &http.Server{Handler: w.handler(h), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)}
		w.servers = append(w.servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Warn("realweb host stopped", "host", h, "err", err)
			}
		}()
	}
	return w, nil
}

// Seeds returns every host's root URL ("http://127.0.0.2:41234/").
func (w *Web) Seeds() []string {
	out := make([]string, len(w.bases))
	for i, b := range w.bases {
		out[i] = b + "/"
	}
	return out
}

// Close stops every host.
func (w *Web) Close() error {
	var errs []error
	for _, s := range w.servers {
		errs = append(errs, s.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("realweb close: %w", err)
	}
	return nil
}

// Delay is the wait before the headers of host h's path; Slow reports
// whether its body is trickled over SlowBody. Both are pure functions of
// (h, path), so runs and processes agree.
func Delay(h int, path string) time.Duration {
	return MinDelay + time.Duration(mix(h, path)%uint64(MaxDelay-MinDelay+time.Millisecond)/uint64(time.Millisecond))*time.Millisecond
}

// Slow reports whether host h trickles path's body (see Delay).
func Slow(h int, path string) bool {
	return strings.HasPrefix(path, "/p/") && mix(h, path)/7%SlowEvery == 0
}

func mix(h int, path string) uint64 {
	f := fnv.New64a()
	fmt.Fprintf(f, "%d %s", h, path)
	return f.Sum64()
}

var modTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (w *Web) handler(h int) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		body, ctype, ok := w.object(h, path)
		if !ok {
			http.NotFound(rw, r)
			return
		}
		if !w.cfg.NoDelay {
			select {
			case <-time.After(Delay(h, path)):
			case <-r.Context().Done():
				return
			}
		}
		rw.Header().Set("Content-Type", ctype)
		rw.Header().Set("ETag", strconv.Quote(fmt.Sprintf("%x", mix(h, path))))
		if w.cfg.NoDelay || !Slow(h, path) {
			http.ServeContent(rw, r, "", modTime, bytes.NewReader(body))
			return
		}
		rw.Header().Set("Last-Modified", modTime.Format(http.TimeFormat))
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		const pieces = 16
		for i := range pieces {
			rw.Write(body[i*len(body)/pieces : (i+1)*len(body)/pieces]) //nolint:errcheck // a client gone is not our error
			rw.(http.Flusher).Flush()
			select {
			case <-time.After(SlowBody / pieces):
			case <-r.Context().Done():
				return
			}
		}
	})
}

// object returns the body and type of host h's path.
func (w *Web) object(h int, path string) ([]byte, string, bool) {
	switch {
	case path == "/robots.txt":
		return []byte("User-agent: *\nDisallow:\n"), "text/plain", true
	case path == "/":
		return w.page(h, 0), "text/html; charset=utf-8", true
	case path == "/css/site.css":
		return []byte(fmt.Sprintf("body{margin:%dpx;background:url(/img/0.png)}", h%9)), "text/css", true
	case path == "/img/big.png":
		return bytes.Repeat([]byte{0x89, 'P', 'N', 'G', byte(h)}, LargeSize/5), "image/png", true
	case strings.HasPrefix(path, "/img/") && strings.HasSuffix(path, ".png"):
		k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, "/img/"), ".png"))
		if err != nil || k < 0 || k >= images {
			return nil, "", false
		}
		return []byte(fmt.Sprintf("\x89PNG\r\n\x1a\n%0*d", 2000+k*1000, h)), "image/png", true
	case strings.HasPrefix(path, "/p/") && strings.HasSuffix(path, ".html"):
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, "/p/"), ".html"))
		if err != nil || n < 0 || n >= w.cfg.Pages || strconv.Itoa(n) != strings.TrimSuffix(strings.TrimPrefix(path, "/p/"), ".html") {
			return nil, "", false
		}
		return w.page(h, n), "text/html; charset=utf-8", true
	}
	return nil, "", false
}

const filler = "Herodotus of Halicarnassus here presents his research, so that human events do not fade with time. "

// page renders page n of host h.
func (w *Web) page(h, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>host %d page %d</title><link rel=stylesheet href=\"/css/site.css\"></head><body><h1>Page %d</h1>", h, n, n)
	fmt.Fprintf(&b, "<img src=\"/img/%d.png\">", n%images)
	paras := 6 + int(mix(h, strconv.Itoa(n))%15)
	for i := range paras {
		fmt.Fprintf(&b, "<p>%d. %s</p>", i, strings.Repeat(filler, 10))
	}
	fmt.Fprintf(&b, "<a href=\"/p/%d.html\">next</a>", (n+1)%w.cfg.Pages)
	for k := 1; k <= 5; k++ {
		fmt.Fprintf(&b, "<a href=\"/p/%d.html\">see %d</a>", (n*7+k*3)%w.cfg.Pages, k)
	}
	other := (h + 1 + int(mix(h, "x"+strconv.Itoa(n))%uint64(w.cfg.Hosts))) % w.cfg.Hosts
	fmt.Fprintf(&b, "<a href=\"%s/p/%d.html\">elsewhere</a>", w.bases[other], n)
	if n == 5 {
		b.WriteString("<a href=\"/img/big.png\">poster</a>")
	}
	b.WriteString("</body></html>")
	return b.Bytes()
}
