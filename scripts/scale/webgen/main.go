package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	cfg := config{}
	flag.IntVar(&cfg.urls, "urls", 10_000, "pages on day 0")
	flag.IntVar(&cfg.hosts, "hosts", 0, "hosts (0: urls/2500, at least 20)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of every page's bytes, links and changes")
	flag.IntVar(&cfg.links, "links", 8, "cross links per page (two tree links come on top)")
	flag.Float64Var(&cfg.change, "change", 0.05, "share of live pages that change each day")
	flag.Float64Var(&cfg.gone, "gone", 0.01, "share of live pages that disappear each day")
	flag.Float64Var(&cfg.fresh, "new", 0.02, "new pages each day, as a share of -urls")
	control := flag.String("control", "127.0.0.1:0", "loopback address of the control server")
	addrs := flag.String("addrs", "", "file to write the control URL and the hosts' root URLs to (default stdout)")
	flag.Parse()
	if cfg.hosts <= 0 {
		cfg.hosts = max(20, cfg.urls/2500)
	}
	if cfg.urls < cfg.hosts || cfg.hosts > 250*250 {
		log.Fatalf("webgen: %d urls over %d hosts: want urls >= hosts and at most 62500 hosts", cfg.urls, cfg.hosts)
	}
	w := newWeb(cfg)
	if err := serve(w, *control, *addrs); err != nil {
		log.Fatalf("webgen: %v", err)
	}
}

// serve listens on the control address and one address per host, writes
// the URLs and serves until a listener fails.
func serve(w *web, control, addrs string) error {
	var lc net.ListenConfig
	ctx := context.Background()
	cln, err := lc.Listen(ctx, "tcp", control)
	if err != nil {
		return fmt.Errorf("control listen: %w", err)
	}
	if ip := cln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		return fmt.Errorf("control address %s is not loopback", ip)
	}
	out := io.Writer(os.Stdout)
	if addrs != "" {
		f, err := os.Create(addrs + ".tmp")
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "http://%s/\n", cln.Addr())
	errs := make(chan error, w.cfg.hosts+1)
	for h := range w.cfg.hosts {
		ln, err := lc.Listen(ctx, "tcp", fmt.Sprintf("127.77.%d.%d:0", h/250, h%250+1))
		if err != nil {
			return fmt.Errorf("host %d listen: %w", h, err)
		}
		w.hostNames[h] = ln.Addr().String()
		fmt.Fprintf(bw, "http://%s/\n", ln.Addr())
		srv := &http.Server{Handler: w.hostHandler(h), ReadHeaderTimeout: 30 * time.Second}
		go func() { errs <- srv.Serve(ln) }()
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if addrs != "" {
		if err := os.Rename(addrs+".tmp", addrs); err != nil {
			return err
		}
	}
	go func() { errs <- (&http.Server{Handler: w.controlHandler()}).Serve(cln) }()
	return <-errs
}

type config struct {
	urls, hosts, links  int
	seed                uint64
	change, gone, fresh float64
}

// web is the synthetic web; its pages are functions of (seed, id, day).
type web struct {
	cfg       config
	hostNames []string // host:port per host index
	corpus    []byte
	day       atomic.Int64
	st        counters
}

// counters of the current day's answers.
type counters struct {
	requests, ok, notModified, notFound, bytes atomic.Int64
}

func newWeb(cfg config) *web {
	w := &web{cfg: cfg, hostNames: make([]string, cfg.hosts)}
	w.corpus = makeCorpus(cfg.seed, 2<<20)
	return w
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hash returns a deterministic value of the seed and its arguments.
func (w *web) hash(vs ...uint64) uint64 {
	h := mix(w.cfg.seed)
	for _, v := range vs {
		h = mix(h ^ v)
	}
	return h
}

// unit maps h to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

const (
	saltChange = iota + 1
	saltGone
	saltLink
	saltSize
	saltText
)

// perDay is how many pages appear each day after day 0.
func (w *web) perDay() int { return int(math.Round(w.cfg.fresh * float64(w.cfg.urls))) }

// born returns the day page p appears.
func (w *web) born(p int) int64 {
	if p < w.cfg.urls {
		return 0
	}
	return int64((p-w.cfg.urls)/max(w.perDay(), 1)) + 1
}

// ids returns how many page ids exist by day d.
func (w *web) ids(d int64) int { return w.cfg.urls + int(d)*w.perDay() }

// state returns whether page p is live on day d and its version then.
func (w *web) state(p int, d int64) (live bool, version int) {
	b := w.born(p)
	if b > d || p >= w.ids(d) {
		return false, 0
	}
	for e := b + 1; e <= d; e++ {
		if unit(w.hash(uint64(p), uint64(e), saltGone)) < w.cfg.gone {
			return false, 0
		}
		if unit(w.hash(uint64(p), uint64(e), saltChange)) < w.cfg.change {
			version++
		}
	}
	return true, version
}

// path returns page p's path on its host.
func path(local int) string { return fmt.Sprintf("/s%d/page-%d.html", local/100, local) }

// url returns page p's absolute URL.
func (w *web) url(p int) string {
	return "http://" + w.hostNames[p%w.cfg.hosts] + path(p/w.cfg.hosts)
}

// size returns page p's body size: log-normal, median 12 KiB, 1-256 KiB.
func (w *web) size(p int) int {
	h := w.hash(uint64(p), saltSize)
	u1, u2 := max(unit(h), 1e-12), unit(mix(h))
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return int(min(max(12<<10*math.Exp(0.8*z), 1<<10), 256<<10))
}

// page writes page p at version v on day d.
func (w *web) page(p, v int, d int64) []byte {
	hosts := w.cfg.hosts
	host, local := p%hosts, p/hosts
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><title>page %d version %d</title></head><body>\n<h1>Page %d</h1>\n<nav>\n", p, v, p)
	// Tree links over the day-0 pages of the host.
	for _, c := range []int{2*local + 1, 2*local + 2} {
		if q := c*hosts + host; q < w.cfg.urls {
			fmt.Fprintf(&b, "<a href=\"%s\">child %d</a>\n", path(c), c)
		}
	}
	for k := range w.cfg.links {
		q := int(w.hash(uint64(p), uint64(v), uint64(k), saltLink) % uint64(w.ids(w.born(p))))
		fmt.Fprintf(&b, "<a href=\"%s\">link %d</a>\n", w.url(q), k)
	}
	b.WriteString("</nav>\n<article><p>")
	n := max(w.size(p)-b.Len()-40, 64)
	off := int(w.hash(uint64(p), uint64(v), saltText) % uint64(len(w.corpus)-n))
	b.Write(w.corpus[off : off+n])
	b.WriteString("</p></article></body></html>\n")
	return []byte(b.String())
}

// front writes host h's front page on day d: its first tree links and the
// pages that appeared on the host that day.
func (w *web) front(h int, d int64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><title>host %d day %d</title></head><body>\n<ul>\n", h, d)
	for _, c := range []int{0, 1} {
		if c*w.cfg.hosts+h < w.cfg.urls {
			fmt.Fprintf(&b, "<li><a href=\"%s\">start %d</a></li>\n", path(c), c)
		}
	}
	if d > 0 {
		lo, hi := w.ids(d-1), w.ids(d)
		first := lo + ((h-lo%w.cfg.hosts)+w.cfg.hosts)%w.cfg.hosts
		for p := first; p < hi; p += w.cfg.hosts {
			fmt.Fprintf(&b, "<li><a href=\"%s\">new %d</a></li>\n", path(p/w.cfg.hosts), p)
		}
	}
	b.WriteString("</ul></body></html>\n")
	return []byte(b.String())
}

// hostHandler answers host h's pages.
func (w *web) hostHandler(h int) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.st.requests.Add(1)
		d := w.day.Load()
		var body []byte
		var etag string
		switch p := r.URL.Path; {
		case p == "/":
			body, etag = w.front(h, d), fmt.Sprintf(`"f%d-%d"`, h, d)
		case strings.HasPrefix(p, "/s") && strings.HasSuffix(p, ".html"):
			_, rest, _ := strings.Cut(p, "/page-")
			local, err := strconv.Atoi(strings.TrimSuffix(rest, ".html"))
			if err != nil || local < 0 || path(local) != p {
				break
			}
			id := local*w.cfg.hosts + h
			if live, v := w.state(id, d); live {
				etag = fmt.Sprintf(`"p%d-%d"`, id, v)
				if r.Header.Get("If-None-Match") == etag {
					w.st.notModified.Add(1)
					rw.Header().Set("ETag", etag)
					rw.WriteHeader(http.StatusNotModified)
					return
				}
				body = w.page(id, v, d)
			}
		}
		if body == nil {
			w.st.notFound.Add(1)
			http.NotFound(rw, r)
			return
		}
		w.st.ok.Add(1)
		w.st.bytes.Add(int64(len(body)))
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("ETag", etag)
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		rw.Write(body)
	})
}

// Stats is GET /stats's answer.
type Stats struct {
	Day         int64 `json:"day"`
	Live        int   `json:"live"` // live pages today, front pages aside
	Hosts       int   `json:"hosts"`
	Requests    int64 `json:"requests"`
	OK          int64 `json:"ok"`
	NotModified int64 `json:"notModified"`
	NotFound    int64 `json:"notFound"`
	Bytes       int64 `json:"bytes"`
}

func (w *web) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /day", func(rw http.ResponseWriter, r *http.Request) {
		d, err := strconv.ParseInt(r.URL.Query().Get("d"), 10, 64)
		if err != nil || d < 0 {
			http.Error(rw, "webgen: want d=<day>, a day number >= 0", http.StatusBadRequest)
			return
		}
		w.day.Store(d)
		for _, c := range []*atomic.Int64{&w.st.requests, &w.st.ok, &w.st.notModified, &w.st.notFound, &w.st.bytes} {
			c.Store(0)
		}
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /stats", func(rw http.ResponseWriter, _ *http.Request) {
		d := w.day.Load()
		live := 0
		for p := range w.ids(d) {
			if ok, _ := w.state(p, d); ok {
				live++
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(Stats{Day: d, Live: live, Hosts: w.cfg.hosts,
			Requests: w.st.requests.Load(), OK: w.st.ok.Load(), NotModified: w.st.notModified.Load(),
			NotFound: w.st.notFound.Load(), Bytes: w.st.bytes.Load()})
	})
	return mux
}

// words is the vocabulary of the corpus.
var words = strings.Fields(`the of and to in a is that for it as was with be by on not he
i this are or his from at which but have an they you were her she there one all we their
can has been if more when will would who so no archive web page crawl link host day node
ring store index version record replay query history network server client content data
time year people way first new good long great little own other old right big high different
small large next early young important few public bad same able`)

// makeCorpus returns n bytes of words in a seeded order, with sentence
// punctuation: text that compresses like prose.
func makeCorpus(seed uint64, n int) []byte {
	b := make([]byte, 0, n+16)
	h := mix(seed ^ 0x5eed)
	for i := 0; len(b) < n; i++ {
		h = mix(h)
		// Zipf-like: small indexes are much more frequent.
		k := int(float64(len(words)) * math.Pow(unit(h), 2.5))
		b = append(b, words[k]...)
		switch {
		case h%13 == 0:
			b = append(b, ". "...)
		case h%7 == 0:
			b = append(b, ", "...)
		default:
			b = append(b, ' ')
		}
	}
	return b[:n]
}
