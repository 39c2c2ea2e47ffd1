package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/testwait"
)

// gatedArchive is a fakeArchive whose Get waits for release once it has
// counted itself in entered.
type gatedArchive struct {
	*fakeArchive
	entered atomic.Int64
	release chan struct{}
}

func (g *gatedArchive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	g.entered.Add(1)
	select {
	case <-g.release:
	case <-ctx.Done():
		return archive.Version{}, nil, ctx.Err()
	}
	return g.fakeArchive.Get(ctx, url, t)
}

// TestBusyPastMaxInFlight: past Limits.MaxInFlight a request is answered
// 503 with Retry-After at once, status stays reachable, and the places
// come back when the requests end.
func TestBusyPastMaxInFlight(t *testing.T) {
	g := &gatedArchive{fakeArchive: newFake(), release: make(chan struct{})}
	g.add(t, page, "20210101000000", 200, "text/html", "<p>hello</p>")
	d := serveDirect(t, g, func(c *Config) {
		c.Limits.MaxInFlight = 2
		c.Status = func(context.Context) any { return "ok" }
	})
	ui, content := d.ui, d.content
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two addresses: the same one would wait for the
			// first's reply (replycache.go).
			resp, err := http.Get(content + "/web/2021010100000" + strconv.Itoa(i) + "/" + page)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	testwait.For(t, "two requests inside the archive", 20*time.Second, func() bool { return g.entered.Load() == 2 })
	resp, err := http.Get(content + "/web/20210101000000/" + page)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if g.entered.Load() != 2 {
		t.Errorf("the refused request reached the archive")
	}
	// The operator still sees why.
	resp, err = http.Get(ui + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status while busy: %d, want 200", resp.StatusCode)
	}
	close(g.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("admitted request: %d", c)
		}
	}
	resp, err = http.Get(content + "/web/20210101000000/" + page)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the load: %d, want 200", resp.StatusCode)
	}
}

// direct is a gateway served as a node serves it (the handlers straight
// on http.Server, so that the write deadlines reach the connections).
type direct struct {
	s           *Server
	ui, content string       // base URLs
	closed      atomic.Int64 // connections the servers closed
}

// serveDirect serves a gateway over a on two loopback listeners.
func serveDirect(t testing.TB, a Archive, mod ...func(*Config)) *direct {
	t.Helper()
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = smallSendBuffer{ln}
	}
	port := func(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }
	d := &direct{}
	d.s = newServer(t, a, append([]func(*Config){func(c *Config) {
		c.UIOrigin, c.ContentOrigin = ":"+port(lns[0]), ":"+port(lns[1])
	}}, mod...)...)
	for i, h := range []http.Handler{d.s.UI(), d.s.Content()} {
		srv := &httptest.Server{Listener: lns[i], Config: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			ConnState: func(_ net.Conn, st http.ConnState) {
				if st == http.StateClosed {
					d.closed.Add(1)
				}
			}}}
		srv.Start()
		t.Cleanup(srv.Close)
	}
	d.ui, d.content = "http://"+lns[0].Addr().String(), "http://"+lns[1].Addr().String()
	return d
}

// smallSendBuffer gives accepted connections a fixed, small send buffer:
// Linux wakes a blocked writer only when a third of the buffer is free,
// so with the loopback's autotuned megabytes a reader at 640 KiB/s would
// leave a write blocked for seconds; the tests' short WriteProgress
// periods need a buffer that frees in milliseconds.
type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(128 << 10)
	}
	return c, err
}

// rawGet sends a GET for path to base on a raw connection whose receive
// buffer is rcvbuf bytes, and returns it with a reader positioned at the
// response.
func rawGet(t testing.TB, base, path string, rcvbuf int) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{}
	conn, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(rcvbuf)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, u.Host)
	return conn, bufio.NewReaderSize(conn, 4096)
}

// TestStalledReaderDropped: a reader that stops reading is dropped after
// Limits.WriteProgress, its connection closed, its body's memory long
// released (spooled); a slow reader that keeps reading gets all of a page
// that takes it many WriteProgress periods.
func TestStalledReaderDropped(t *testing.T) {
	const size = 4 << 20
	f := newFake()
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	f.add(t, page, "20210101000000", 200, "application/pdf", string(big))
	d := serveDirect(t, f, func(c *Config) {
		// Long enough that a live reader descheduled by a loaded machine
		// (the race detector on 2 busy cores) is not taken for a stalled one.
		c.Limits.WriteProgress = 2 * time.Second
		c.Limits.SpoolDir = t.TempDir()
	})
	stats, content := d.s.Stats, d.content
	// A small receive buffer, so that the server meets the stall soon.
	_, br := rawGet(t, content, "/web/20210101000000id_/"+page, 16<<10)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("status line %q, %v", status, err)
	}
	// Stop reading: within a few WriteProgress periods the gateway
	// drops the reply.
	testwait.For(t, "the stalled reader dropped", 20*time.Second, func() bool { return stats().Stalled == 1 })
	if st := stats(); st.MemoryHeld != 0 || st.Spooled != 1 {
		t.Errorf("stalled reader: %d bytes held, %d spooled; want 0 held (spooled)", st.MemoryHeld, st.Spooled)
	}
	testwait.For(t, "the stalled reader's connection closed", 20*time.Second, func() bool { return d.closed.Load() == 1 })

	// A slow but live reader: 32 KiB every 50 ms, 3 MiB in ~4.8 s, more
	// than two WriteProgress periods.
	// A receive buffer larger than the loopback's segments (64 KiB): a
	// smaller one opens its window only on the sender's persist timer,
	// which backs off past any short deadline.
	slow, sbr := rawGet(t, content, "/web/20210101000000id_/"+page, 256<<10)
	slow.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(sbr, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	buf := make([]byte, 32<<10)
	for got < 3<<20 {
		n, err := io.ReadFull(resp.Body, buf)
		got += n
		if err != nil {
			t.Fatalf("slow reader cut off after %d bytes: %v (%+v)", got, err, stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	rest, err := io.Copy(io.Discard, resp.Body)
	if err != nil || int64(got)+rest != size {
		t.Errorf("slow reader: %d bytes, %v; want %d", int64(got)+rest, err, size)
	}
	if st := stats(); st.Stalled != 1 {
		t.Errorf("stalled %d, want 1 (the slow reader was not dropped)", st.Stalled)
	}
}

// TestForwardedIsRemote: a request relayed by a proxy on the node's own
// machine — a loopback connection to an IP host, but with any forwarding
// header — may not read the private status; the same request sent
// directly may; the admin token opens it through the proxy too.
func TestForwardedIsRemote(t *testing.T) {
	mod := func(c *Config) {
		c.AdminToken = "tok"
		c.Status = func(context.Context) any { return "STATUS" }
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("m 1\n")) })
		c.UIOrigin, c.ContentOrigin = ":5001", ":5002"
	}
	s := newServer(t, newFake(), mod)
	ask := func(path string, hdr ...string) int {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:5001"+path, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	if c := ask("/api/status"); c != http.StatusOK {
		t.Fatalf("direct from this machine: %d, want 200", c)
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-IP", "Via"} {
		for _, p := range []string{"/api/status", "/metrics"} {
			if c := ask(p, h, "203.0.113.9"); c != http.StatusForbidden {
				t.Errorf("%s with %s: %d, want 403", p, h, c)
			}
		}
		if c := ask("/api/status", h, "203.0.113.9", "Authorization", "Bearer tok"); c != http.StatusOK {
			t.Errorf("with %s and the token: %d, want 200", h, c)
		}
	}
}

// TestBehindRealProxy puts a reverse proxy (net/http/httputil, which
// adds X-Forwarded-For as nginx and Caddy are configured to) on loopback
// in front of the gateway and passes the upstream's IP address as Host,
// as nginx's proxy_pass does by default: status is private through it.
func TestBehindRealProxy(t *testing.T) {
	ui := serveDirect(t, newFake(), func(c *Config) {
		c.AdminToken = "tok"
		c.Status = func(context.Context) any { return "STATUS" }
	}).ui
	target, _ := url.Parse(ui)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = target.Host
		pr.SetXForwarded()
	}})
	defer proxy.Close()
	code := func(base string, hdr ...string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/status", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := code(ui); c != http.StatusOK {
		t.Errorf("direct: %d, want 200", c)
	}
	if c := code(proxy.URL); c != http.StatusForbidden {
		t.Errorf("through the proxy: %d, want 403", c)
	}
	if c := code(proxy.URL, "Authorization", "Bearer tok"); c != http.StatusOK {
		t.Errorf("through the proxy with the token: %d, want 200", c)
	}
}

// TestClientKey: the per-client limits tell apart the clients a local
// proxy relays, and believe no remote connection about another address.
func TestClientKey(t *testing.T) {
	for _, tc := range []struct {
		remote string
		hdr    []string
		want   string
	}{
		{"192.0.2.1:1000", nil, "192.0.2.1"},
		{"192.0.2.1:1000", []string{"X-Forwarded-For", "198.51.100.7"}, "192.0.2.1"},
		{"127.0.0.1:1000", nil, "127.0.0.1"},
		{"127.0.0.1:1000", []string{"X-Forwarded-For", "10.0.0.1, 198.51.100.7"}, "198.51.100.7"},
		{"127.0.0.1:1000", []string{"X-Real-IP", "198.51.100.8"}, "198.51.100.8"},
		{"127.0.0.1:1000", []string{"X-Forwarded-For", "junk"}, "127.0.0.1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			r.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		if got := clientKey(r); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.remote, tc.hdr, got, tc.want)
		}
	}
}

// TestBudget: a share is granted while it fits, a waiter that fits takes
// room released before a larger one, and a wait ends at its bound.
func TestBudget(t *testing.T) {
	b := newBudget(10)
	if !b.tryAcquire(8) || b.tryAcquire(3) {
		t.Fatal("tryAcquire past the size")
	}
	if b.charge(50) != 10 || b.charge(0) != 1 {
		t.Errorf("charge: %d %d", b.charge(50), b.charge(0))
	}
	ctx := context.Background()
	if b.acquire(ctx, 5, 20*time.Millisecond) {
		t.Fatal("acquire past the size within the wait")
	}
	big := make(chan bool)
	go func() { big <- b.acquire(ctx, 10, 5*time.Second) }()
	small := make(chan bool)
	go func() { small <- b.acquire(ctx, 3, 5*time.Second) }()
	b.release(5) // 3 used: the small one fits, the big one does not
	if !<-small {
		t.Fatal("small waiter not granted")
	}
	b.release(3)
	b.release(3)
	if !<-big {
		t.Fatal("big waiter not granted once all was free")
	}
	if b.inUse() != 10 {
		t.Errorf("in use %d, want 10", b.inUse())
	}
}

// countingArchive counts Get calls.
type countingArchive struct {
	*fakeArchive
	gets atomic.Int64
}

func (c *countingArchive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	c.gets.Add(1)
	return c.fakeArchive.Get(ctx, url, t)
}

// TestMemoryBudget: a reply whose body finds no room in MemoryBudget
// within BusyWait is 503 with Retry-After, having dropped the body; with
// room it is served, and the budget is whole again after every reply.
func TestMemoryBudget(t *testing.T) {
	f := &countingArchive{fakeArchive: newFake()}
	f.add(t, page, "20210101000000", 200, "text/html", strings.Repeat("<p>words</p>", 100<<10)) // 1.2 MB
	s := newServer(t, f, func(c *Config) {
		c.Limits.MemoryBudget = 8 << 20
		c.Limits.BusyWait = 50 * time.Millisecond
		c.Limits.SpoolDir = t.TempDir()
	})
	if !s.mem.tryAcquire(6 << 20) { // another reply holds most of it
		t.Fatal("budget")
	}
	w := get(t, s, "/web/20210101000000/"+page)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("without room: %d, Retry-After %q; want 503", w.Code, w.Header().Get("Retry-After"))
	}
	if f.gets.Load() != 1 {
		t.Errorf("%d Gets, want 1 (the body dropped, not read again without room)", f.gets.Load())
	}
	s.mem.release(6 << 20)
	w = get(t, s, "/web/20210101000000/"+page)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "<p>words</p>") {
		t.Fatalf("with room: %d", w.Code)
	}
	if st := s.Stats(); st.MemoryHeld != 0 || st.Busy != 1 || st.Spooled != 1 {
		t.Errorf("after: %d held, %d busy, %d spooled; want 0, 1, 1", st.MemoryHeld, st.Busy, st.Spooled)
	}
}

// TestSharedReply: requests for a large replay that arrive while it is
// prepared, or soon after, are served from the first one's spool file:
// one Get, the same bytes.
func TestSharedReply(t *testing.T) {
	g := &gatedArchive{fakeArchive: newFake(), release: make(chan struct{})}
	g.add(t, page, "20210101000000", 200, "text/html", strings.Repeat("<p>words</p>", 100<<10))
	d := serveDirect(t, g, func(c *Config) { c.Limits.SpoolDir = t.TempDir() })
	bodies := make(chan string, 3)
	var wg sync.WaitGroup
	fetch := func() {
		defer wg.Done()
		resp, err := http.Get(d.content + "/web/20210101000000/" + page)
		if err != nil {
			t.Error(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status %d", resp.StatusCode)
		}
		bodies <- string(b)
	}
	wg.Add(2)
	go fetch()
	testwait.For(t, "the first request inside the archive", 20*time.Second, func() bool { return g.entered.Load() == 1 })
	go fetch()
	testwait.For(t, "the second request waiting", 20*time.Second, func() bool { return d.s.Stats().InFlight == 2 })
	close(g.release)
	wg.Wait()
	wg.Add(1)
	fetch() // soon after
	close(bodies)
	var first string
	for b := range bodies {
		if first == "" {
			first = b
		} else if b != first {
			t.Errorf("shared reply differs: %d bytes vs %d", len(b), len(first))
		}
	}
	if !strings.Contains(first, "<p>words</p>") {
		t.Errorf("reply: %.100q", first)
	}
	if n, st := g.entered.Load(), d.s.Stats(); n != 1 || st.Shared != 2 {
		t.Errorf("%d Gets, %d shared; want 1 and 2", n, st.Shared)
	}
}

// slowURLArchive blocks the Gets of one URL until release.
type slowURLArchive struct {
	*fakeArchive
	slow    string
	entered atomic.Int64
	release chan struct{}
}

func (a *slowURLArchive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	if url == a.slow {
		a.entered.Add(1)
		select {
		case <-a.release:
		case <-ctx.Done():
			return archive.Version{}, nil, ctx.Err()
		}
	}
	return a.fakeArchive.Get(ctx, url, t)
}

// TestSmallPagePassesLargeFetches: with every fetch slot taken by a Get
// of unknown size, a page last seen small is still served (hints.go).
func TestSmallPagePassesLargeFetches(t *testing.T) {
	const other = "http://example.com/big"
	a := &slowURLArchive{fakeArchive: newFake(), slow: other, release: make(chan struct{})}
	a.add(t, page, "20210101000000", 200, "text/html", "<p>small</p>")
	a.add(t, other, "20210101000000", 200, "text/html", "<p>big</p>")
	d := serveDirect(t, a, func(c *Config) { c.Limits.MaxFetches = 1; c.Limits.BusyWait = 200 * time.Millisecond })
	code := func(u string) int {
		resp, err := http.Get(d.content + "/web/20210101000000/" + u)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := code(page); c != 200 { // now known small
		t.Fatalf("small page: %d", c)
	}
	done := make(chan int, 1)
	go func() { done <- code(other) }()
	testwait.For(t, "the unknown URL holding the fetch slot", 20*time.Second, func() bool { return a.entered.Load() == 1 })
	if c := code(page); c != 200 {
		t.Errorf("small page while the fetch slot is taken: %d, want 200", c)
	}
	if c := code("http://example.com/unknown"); c != http.StatusServiceUnavailable {
		t.Errorf("an unknown URL while the fetch slot is taken: %d, want 503", c)
	}
	close(a.release)
	if c := <-done; c != 200 {
		t.Errorf("the slow URL: %d", c)
	}
}
