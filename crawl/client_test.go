package crawl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The crawler's default client (a net/http Transport guarded by netguard.go)
// against servers that keep connections alive, refuse to, or lie.

// connSite serves n pages (/0 ... /n-1, each linking to the next) through
// page, which writes one page's response; robots.txt is a 404. It counts
// the connections the crawler opened for pages (robots.txt goes through
// the default client and is not counted).
type connSite struct {
	srv      *httptest.Server
	mu       sync.Mutex
	conns    map[int64]bool // the connections that asked for a page
	requests atomic.Int64
}

// connIDKey keys a server connection's number in its requests' contexts.
// A number, not the remote address: on loopback the kernel may give a
// new connection the port of one just closed.
type connIDKey struct{}

func newConnSite(t *testing.T, n int, tlsServer bool, page func(w http.ResponseWriter, r *http.Request, body string)) *connSite {
	s := &connSite{conns: map[int64]bool{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		s.requests.Add(1)
		s.mu.Lock()
		s.conns[r.Context().Value(connIDKey{}).(int64)] = true
		s.mu.Unlock()
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/%d", &i); err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		body := fmt.Sprintf("<html><body><p>page %d</p>", i)
		if i+1 < n {
			body += fmt.Sprintf(`<a href="/%d">next</a>`, i+1)
		}
		page(w, r, body+"</body></html>")
	})
	s.srv = httptest.NewUnstartedServer(h)
	var accepted atomic.Int64
	s.srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connIDKey{}, accepted.Add(1))
	}
	if tlsServer {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *connSite) pageConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func plainPage(w http.ResponseWriter, r *http.Request, body string) {
	w.Header().Set("Content-Type", "text/html")
	io.WriteString(w, body)
}

// crawlConnSite crawls s from each of the paths given (default /0) in
// turn, the next only when the crawler is idle, with one connection to
// the host, and returns the archive. The queue does not keep the order
// of seeds added together, and tests of connection reuse need it.
func crawlConnSite(t *testing.T, s *connSite, tweak func(*Config), paths ...string) (*memArchive, *Crawler) {
	t.Helper()
	cfg := testConfig(newClock())
	cfg.HostConns = 1
	if tweak != nil {
		tweak(&cfg)
	}
	if len(paths) == 0 {
		paths = []string{"/0"}
	}
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	for _, p := range paths {
		if err := c.Add(context.Background(), []string{s.srv.URL + p}); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, c)
	}
	return a, c
}

// wantOnly fails unless path is the one page stored.
func wantOnly(t *testing.T, s *connSite, a *memArchive, path string) {
	t.Helper()
	if got := a.fullURLs(); len(got) != 1 || got[0] != s.srv.URL+path {
		t.Fatalf("stored in full %v, want only %s", got, path)
	}
}

func wantPages(t *testing.T, s *connSite, a *memArchive, n int) {
	t.Helper()
	for i := range n {
		u := fmt.Sprintf("%s/%d", s.srv.URL, i)
		vs := a.versions[u]
		if len(vs) != 1 {
			t.Fatalf("%s stored %d times, want 1 (stored: %v)", u, len(vs), a.urls())
		}
		if !bytes.Contains(vs[0].Body, fmt.Appendf(nil, "<p>page %d</p>", i)) {
			t.Fatalf("%s stored %q", u, vs[0].Body)
		}
	}
}

func TestConnKeptAlive(t *testing.T) {
	const n = 20
	s := newConnSite(t, n, false, plainPage)
	a, c := crawlConnSite(t, s, nil)
	wantPages(t, s, a, n)
	if got := s.pageConns(); got != 1 {
		t.Fatalf("%d connections for %d pages, want 1", got, n)
	}
	if errs := c.Stats().ErrorsByKind; len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

// rawServer serves raw bytes on loopback: robots.txt is a 404, and every
// other request on a connection is given to answer, which writes to the
// connection and reports whether the connection may take another request.
// It returns the server's base URL.
func rawServer(t *testing.T, answer func(conn net.Conn, req *http.Request) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.URL.Path == "/robots.txt" {
						io.WriteString(conn, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
					} else if !answer(conn, req) {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// A crawler given a Client sends every request through it.
func TestSuppliedClientUsed(t *testing.T) {
	const n = 3
	s := newConnSite(t, n, false, plainPage)
	var seen atomic.Int64
	cl := NewClient(1, 5*time.Second, loopback...)
	base := cl.Transport
	cl.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen.Add(1)
		return base.RoundTrip(r)
	})
	a, _ := crawlConnSite(t, s, func(cfg *Config) { cfg.Client = cl })
	wantPages(t, s, a, n)
	if got := seen.Load(); got != n+1 { // the pages and robots.txt
		t.Fatalf("client sent %d requests, want %d", got, n+1)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A body the crawler does not read to its end (a long answer of a type it
// does not keep) leaves its connection unusable: the next page gets a new
// one.
func TestConnUnreadBodyNotReused(t *testing.T) {
	s := newConnSite(t, 2, false, func(w http.ResponseWriter, r *http.Request, body string) {
		if r.URL.Path == "/0" {
			w.Header().Set("Content-Type", "application/x-unkept")
			io.WriteString(w, strings.Repeat("gone ", 4<<10))
			return
		}
		plainPage(w, r, body)
	})
	a, c := crawlConnSite(t, s, func(cfg *Config) { cfg.DenyTypes = []string{"application/x-unkept"} }, "/0", "/1")
	wantOnly(t, s, a, "/1")
	if r := a.truncated(s.srv.URL + "/0"); r != "unspecified" {
		t.Fatalf("/0 recorded with WARC-Truncated %q, want unspecified", r)
	}
	errs := c.Stats().ErrorsByKind
	if len(errs) != 1 || errs[KindContentType] != 1 {
		t.Fatalf("errors %v, want one refused content type", errs)
	}
	if got := s.pageConns(); got != 2 {
		t.Fatalf("%d connections, want 2", got)
	}
	if got := s.requests.Load(); got != 2 {
		t.Fatalf("server answered %d page requests, want 2", got)
	}
}

// connTracker counts, across test servers, the connections that carried a
// page request and are still open, and the most open at once.
type connTracker struct {
	mu        sync.Mutex
	pageConns map[string]bool // by server and remote address
	open, max int
	total     int
}

func (ct *connTracker) server(t *testing.T, pages int) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		key := srv.URL + " " + r.RemoteAddr
		ct.mu.Lock()
		if !ct.pageConns[key] {
			ct.pageConns[key] = true
			ct.open++
			ct.total++
			ct.max = max(ct.max, ct.open)
		}
		ct.mu.Unlock()
		var i int
		fmt.Sscanf(r.URL.Path, "/%d", &i)
		w.Header().Set("Content-Type", "text/html")
		if i+1 < pages {
			fmt.Fprintf(w, `<a href="/%d">next</a>`, i+1)
		}
	}))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st != http.StateClosed && st != http.StateHijacked {
			return
		}
		key := srv.URL + " " + c.RemoteAddr().String()
		ct.mu.Lock()
		if ct.pageConns[key] {
			delete(ct.pageConns, key)
			ct.open--
		}
		ct.mu.Unlock()
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Hosts waiting for their budget keep their connection open only while
// the crawler keeps fewer than KeepAlive of them: many hosts crawled at
// once do not mean as many open connections.
func TestKeptAliveConnectionsBounded(t *testing.T) {
	const hosts, pages, conc = 8, 4, 2
	ct := &connTracker{pageConns: map[string]bool{}}
	var seeds []string
	for range hosts {
		seeds = append(seeds, ct.server(t, pages).URL+"/0")
	}
	cfg := testConfig(newClock())
	cfg.Concurrency, cfg.KeepAlive, cfg.HostConns, cfg.HostRate = conc, conc, 1, 20
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	stop, sampled := make(chan struct{}), make(chan int64)
	go func() { // the most connections the crawler says it holds at once
		var most int64
		for {
			select {
			case <-stop:
				sampled <- most
				return
			default:
			}
			most = max(most, c.Stats().Connections)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	if err := c.Add(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	close(stop)
	most := <-sampled
	if got := len(a.urls()); got != hosts*pages {
		t.Fatalf("stored %d pages, want %d", got, hosts*pages)
	}
	if most > 2*conc || most == 0 {
		t.Fatalf("the crawler held up to %d connections, want 1 to %d", most, 2*conc)
	}
	ct.mu.Lock()
	total, serverMost := ct.total, ct.max
	ct.mu.Unlock()
	// The servers see the same, but for closes not noticed yet.
	if serverMost > 2*conc+2 {
		t.Fatalf("%d page connections open at once at the servers", serverMost)
	}
	// Whether any is reused depends on how the hosts' turns interleave
	// (the Transport closes the least recently used idle connection over
	// the bound); TestConnKeptAlive checks reuse.
	t.Logf("%d connections for %d pages, at most %d open (%d seen by the servers)", total, hosts*pages, most, serverMost)
}

// Servers that lie or send garbage: each bad answer is a fetch error,
// nothing is stored for it, and the next page of the host is fetched on a
// fresh connection.
func TestConnHostileResponses(t *testing.T) {
	cases := map[string]string{
		"garbage":          "\x00\xff\x13 not http at all\r\n\r\n",
		"no status code":   "HTTP/1.1 OK\r\nContent-Length: 2\r\n\r\nhi",
		"bad header":       "HTTP/1.1 200 OK\r\nContent-Type text/html\r\n\r\n",
		"negative length":  "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: -5\r\n\r\nhello",
		"two lengths":      "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"bad chunk size":   "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
		"huge chunk":       "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nhello",
		"cut mid-body":     "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\nonly a little",
		"cut mid-chunks":   "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"101 switching":    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
		"endless 1xx":      strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 20),
		"only a status":    "HTTP/1.1 200 OK\r\n",
		"nothing":          "",
		"gzip lies":        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello",
		"length over body": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 999999\r\n\r\n<html>",
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			base := rawServer(t, func(conn net.Conn, req *http.Request) bool {
				if req.URL.Path == "/good" {
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\ngood")
					return true
				}
				io.WriteString(conn, answer)
				return false // and close
			})
			cfg := testConfig(newClock())
			cfg.HostConns, cfg.Timeout = 1, 2*time.Second
			a := newMemArchive()
			c, _ := startCrawler(t, t.TempDir(), cfg, a)
			if err := c.Add(context.Background(), []string{base + "/bad", base + "/good"}); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, c)
			if got := a.urls(); len(got) != 1 || got[0] != base+"/good" {
				t.Fatalf("stored %v, want only /good", got)
			}
			errs := c.Stats().ErrorsByKind
			// net/http hands a 101 over as a response: an unusable status.
			if n := errs[KindFetch] + errs[KindTimeout] + errs[KindStatusOther]; n != 1 || len(errs) != 1 {
				t.Fatalf("errors %v, want one fetch error or unusable status", errs)
			}
		})
	}
}
