package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proxy is the only way out of the browser: Chromium is started with it
// as its proxy for every scheme and address (loopback included), so each
// connection the page causes — requests the Fetch domain never sees,
// such as WebSockets, preconnects and the requests of other targets,
// included — is dialled here, by a dialer that checks the address it is
// about to connect to, after DNS resolution, as the crawler's does
// (crawl/netguard.go). A name whose DNS answer changes between the
// interception's check and the connection is caught here too.
type proxy struct {
	allow []netip.Prefix
	res   *net.Resolver
	ln    net.Listener
	srv   *http.Server
	rp    *httputil.ReverseProxy
	conns sync.WaitGroup

	mu      sync.Mutex
	permits map[string]bool // host:port the interception let the page ask for
	refused []string        // host:port refused
	tunnels map[net.Conn]struct{}
}

// dialTimeout bounds the dialling of one connection.
const dialTimeout = 10 * time.Second

func startProxy(allow []netip.Prefix, res *net.Resolver) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{allow: allow, res: res, ln: ln, permits: map[string]bool{}, tunnels: map[net.Conn]struct{}{}}
	tr := &http.Transport{
		DialContext:           p.dial,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = r.In.URL
			r.Out.Host = r.In.Host
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "capture proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Addr is the proxy's "127.0.0.1:port".
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// permit lets connections to the host and port of u (a URL the
// interception allowed) through.
func (p *proxy) permit(u *url.URL) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.permits[hostPort(u.Host, u.Scheme)] = true
}

// hostPort returns host with a port, the scheme's default when it has
// none.
func hostPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" || scheme == "wss" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// ErrNotRequested is wrapped by the error of a proxy connection to a
// host and port no request the interception allowed was for: the
// browser's own traffic (updates, sign-in, time), or a connection the
// interception does not see (a WebSocket to another host).
var ErrNotRequested = errors.New("capture: connection to a host the page did not request")

// Refused returns the host:port pairs refused so far.
func (p *proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// Close stops the proxy and every tunnel through it.
func (p *proxy) Close() {
	_ = p.srv.Close()
	p.mu.Lock()
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.conns.Wait()
}

// dial connects to addr (host:port) if the addresses host resolves to
// are allowed, checking again the address it connects to.
func (p *proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := p.dialChecked(ctx, network, addr)
	if err != nil {
		p.mu.Lock()
		if len(p.refused) < 1000 {
			p.refused = append(p.refused, addr)
		}
		p.mu.Unlock()
	}
	return nc, err
}

func (p *proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	ok := p.permits[addr]
	p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotRequested, addr)
	}
	ips, err := resolve(ctx, host, p.allow, p.res)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: dialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		return checkAddr(ap.Addr(), p.allow)
	}}
	for _, ip := range ips {
		var nc net.Conn
		if nc, err = d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port)); err == nil {
			return nc, nil
		}
	}
	return nil, err
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "capture proxy: only absolute http URLs", http.StatusBadRequest)
			return
		}
		r.URL.Host = hostPort(r.URL.Host, r.URL.Scheme)
		p.rp.ServeHTTP(w, r)
		return
	}
	up, err := p.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "capture proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "capture proxy: no hijacking", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		up.Close()
		down.Close()
		return
	}
	p.mu.Lock()
	p.tunnels[up], p.tunnels[down] = struct{}{}, struct{}{}
	p.mu.Unlock()
	p.conns.Add(2)
	// Either side ending or failing ends the tunnel.
	pipe := func(dst, src net.Conn, r io.Reader) {
		defer p.conns.Done()
		_, _ = io.Copy(dst, r)
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.tunnels, dst)
		delete(p.tunnels, src)
		p.mu.Unlock()
	}
	go pipe(up, down, buf.Reader)
	go pipe(down, up, up)
}
