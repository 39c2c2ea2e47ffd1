package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestIsInternal(t *testing.T) {
	for _, c := range []struct {
		ip   string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"172.32.0.1", false},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"100.128.0.1", false},
		{"0.0.0.0", true},
		{"224.0.0.251", true},
		{"255.255.255.255", true},
		{"198.18.0.1", true},
		{"93.184.215.14", false},
		{"8.8.8.8", false},
		{"::", true},
		{"::1", true},
		{"fd00::1", true},
		{"fc00::1", true},
		{"fe80::1%eth0", true},
		{"ff02::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::a00:1", true},    // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:7f00:1::1", true},    // 6to4 of 127.0.0.1
		{"2001:db8::1", true},
		{"2606:4700::1111", false},
	} {
		if got := IsInternal(netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("IsInternal(%s) = %v, want %v", c.ip, got, c.want)
		}
	}
}

func TestGuardAllowList(t *testing.T) {
	allow, err := ParsePrefixes([]string{"10.0.0.0/8", "127.0.0.2", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(allow)
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"10.9.9.9:80", true},
		{"127.0.0.2:80", true},
		{"127.0.0.3:80", false},
		{"[::ffff:127.0.0.2]:80", true},
		{"[fd12::1]:443", true},
		{"[fe80::1%lo]:80", false},
		{"192.168.0.1:80", false},
		{"8.8.8.8:53", true},
		{"localhost:80", false}, // a name never reaches the hook: refused
	} {
		err := g.checkAddr(c.addr)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInternalAddress)) {
			t.Errorf("checkAddr(%s) = %v, want allowed=%v", c.addr, err, c.ok)
		}
	}
	if _, err := ParsePrefixes([]string{"not-a-cidr"}); err == nil {
		t.Error("ParsePrefixes accepted a bad CIDR")
	}
}

// serveOn starts an HTTP server on ip (a loopback address) and counts its
// requests.
func serveOn(t *testing.T, ip string, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestCrawlRefusesInternalAddresses crawls a page on 127.0.0.2 (allowed
// in both runs) linking to a server on 127.0.0.1 by address and by the
// name localhost (refused after DNS resolution), to ::1, to private, link-local and CGNAT addresses, and
// redirecting to the second server. By default none of those is fetched
// or stored and each is counted as KindInternal; with loopback allowed
// the second server's pages are archived (the private ones stay refused:
// the allow-list opens only its ranges).
func TestCrawlRefusesInternalAddresses(t *testing.T) {
	inner, innerHits := serveOn(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>internal secret</body></html>")
	})
	_, port, _ := net.SplitHostPort(inner.Listener.Addr().String())
	internal := []string{
		inner.URL + "/admin",
		"http://localhost:" + port + "/by-name",
		"http://10.1.2.3/",
		"http://192.168.1.1/",
		"http://172.16.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://100.64.0.1/",
		"http://[::1]:" + port + "/v6",
	}
	var page strings.Builder
	page.WriteString("<html><body>")
	for _, u := range internal {
		fmt.Fprintf(&page, `<a href="%s">x</a>`, u)
	}
	page.WriteString(`<a href="/moved">m</a></body></html>`)
	outer, _ := serveOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/moved":
			http.Redirect(w, r, inner.URL+"/redirected", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page.String())
		}
	})

	crawlOnce := func(allow []netip.Prefix) (*memArchive, Stats) {
		cfg := testConfig(newClock())
		cfg.AllowPrivate = allow
		a := newMemArchive()
		c, _ := startCrawler(t, t.TempDir(), cfg, a)
		if err := c.Add(context.Background(), []string{outer.URL + "/"}); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, c)
		return a, c.Stats()
	}

	a, st := crawlOnce([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")})
	if n := innerHits.Load(); n != 0 {
		t.Errorf("default: the internal server got %d requests, want 0", n)
	}
	for _, u := range a.urls() {
		if !strings.HasPrefix(u, outer.URL) {
			t.Errorf("default: %s archived", u)
		}
	}
	if got := a.count(outer.URL + "/moved"); got != 1 {
		t.Errorf("the redirect itself (on an allowed address) stored %d times, want 1", got)
	}
	// Every internal link and the redirect's target: one refusal each
	// (localhost and 127.0.0.3 are distinct origins, ::1 too).
	if got, want := st.ErrorsByKind[KindInternal], int64(len(internal)+1); got != want {
		t.Errorf("default: %d %s errors, want %d (%v)", got, KindInternal, want, st.ErrorsByKind)
	}

	a, st = crawlOnce(loopback)
	// (The server does not listen on ::1: that link fails to connect.)
	for _, u := range []string{inner.URL + "/admin", inner.URL + "/redirected", "http://localhost:" + port + "/by-name"} {
		if got := a.count(u); got != 1 {
			t.Errorf("allow-list: %s stored %d times, want 1", u, got)
		}
	}
	if innerHits.Load() == 0 {
		t.Error("allow-list: the loopback server got no request")
	}
	if got, want := st.ErrorsByKind[KindInternal], int64(5); got != want {
		t.Errorf("allow-list: %d %s errors, want %d for the 5 private, link-local and CGNAT links (%v)", got, KindInternal, want, st.ErrorsByKind)
	}
}

// TestRobotsRedirectToInternal: a public-looking origin (here 127.0.0.2,
// allowed) whose robots.txt redirects to an internal server: the redirect
// is not followed there, no byte of the internal file comes back.
func TestRobotsRedirectToInternal(t *testing.T) {
	inner, innerHits := serveOn(t, "127.0.0.3", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secret-key-material")
	})
	outer, _ := serveOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/admin/keys", http.StatusFound)
	})
	h := &HTTPRobots{Client: NewClient(1, 0, netip.MustParsePrefix("127.0.0.2/32"))}
	rec, err := h.Robots(context.Background(), outer.URL)
	if !errors.Is(err, ErrInternalAddress) {
		t.Fatalf("Robots = %+v, %v; want ErrInternalAddress", rec, err)
	}
	if strings.Contains(string(rec.Body), "secret") || innerHits.Load() != 0 {
		t.Fatalf("internal server reached: %d requests, body %q", innerHits.Load(), rec.Body)
	}
	// The crawler's own client, as the node's robots protocol uses it.
	c, err := New(t.TempDir(), Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.RobotsRecord(context.Background(), outer.URL); !errors.Is(err, ErrInternalAddress) {
		t.Fatalf("RobotsRecord: %v, want ErrInternalAddress", err)
	}
	if innerHits.Load() != 0 {
		t.Fatal("internal server reached through the crawler's robots")
	}
}

// TestSuppliedClientGuarded: a client the crawler is given is checked on
// the address it connects to, as the default client's connections are.
func TestSuppliedClientGuarded(t *testing.T) {
	srv, hits := serveOn(t, "127.0.0.3", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html></html>")
	})
	cfg := testConfig(newClock())
	cfg.AllowPrivate = nil
	cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), []string{srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if hits.Load() != 0 || len(a.urls()) != 0 {
		t.Fatalf("supplied client reached loopback: %d requests, stored %v", hits.Load(), a.urls())
	}
	if st := c.Stats(); st.ErrorsByKind[KindInternal] != 1 {
		t.Fatalf("errors %v, want one %s", st.ErrorsByKind, KindInternal)
	}
}

// TestGuardProxy: a request sent through a proxy has its target checked
// (the proxy, not the guarded dialer, connects to it), and the proxy the
// environment names is dialled wherever it is.
func TestGuardProxy(t *testing.T) {
	proxy, _ := serveOn(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {})
	pu, _ := url.Parse(proxy.URL)
	env := func(*http.Request) (*url.URL, error) { return pu, nil }
	g := newGuard(nil)
	pf := g.proxy(env)
	for _, c := range []struct {
		target string
		ok     bool
	}{
		{"http://127.0.0.1:9/", false},
		{"http://10.0.0.1/", false},
		{"http://localhost:9/", false},
		{"http://8.8.8.8/", true},
	} {
		req, _ := http.NewRequest(http.MethodGet, c.target, nil)
		p, err := pf(req)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInternalAddress)) {
			t.Errorf("proxy for %s: %v, %v; want allowed=%v", c.target, p, err, c.ok)
		}
	}
	// The proxy's own address (loopback here) is dialled: the operator
	// chose it. Any other loopback address is not.
	nc, err := g.dialContext(context.Background(), "tcp", pu.Host)
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	nc.Close()
	if _, err := g.dialContext(context.Background(), "tcp", "127.0.0.1:9"); !errors.Is(err, ErrInternalAddress) {
		t.Fatalf("dial 127.0.0.1:9: %v, want ErrInternalAddress", err)
	}
}
