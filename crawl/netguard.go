package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// The crawler fetches what the web links to and what peers ask for, so it
// must not become a way into the network it runs in: a page linking to
// http://10.0.0.1/admin, a peer asking for the robots.txt of
// http://127.0.0.1:8500, a public name whose DNS answer is 169.254.169.254
// (the cloud metadata service), a redirect to any of these. Every
// connection the crawler opens is checked on the address it is about to
// connect to, after DNS resolution (a net.Dialer Control hook, or the
// connected address for a Transport it was given), so no name, redirect
// or DNS answer that changes between two look-ups gets around it.

// ErrInternalAddress is wrapped by the error of a connection refused
// because its address is special-purpose (loopback, private, link-local,
// CGNAT, multicast, unspecified, reserved) and not in Config.AllowPrivate.
var ErrInternalAddress = errors.New("crawl: internal address refused")

// specialPurpose are the address ranges the crawler refuses by default:
// the IANA IPv4 and IPv6 special-purpose registries, minus the ranges
// that carry public addresses (NAT64 and 6to4 are checked on the IPv4
// address they embed).
var specialPurpose = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",         // "this network", unspecified
		"10.0.0.0/8",        // private (RFC 1918)
		"100.64.0.0/10",     // shared address space, CGNAT (RFC 6598)
		"127.0.0.0/8",       // loopback
		"169.254.0.0/16",    // link-local, cloud metadata services
		"172.16.0.0/12",     // private (RFC 1918)
		"192.0.0.0/24",      // IETF protocol assignments
		"192.0.2.0/24",      // documentation
		"192.88.99.0/24",    // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",    // private (RFC 1918)
		"198.18.0.0/15",     // benchmarking
		"198.51.100.0/24",   // documentation
		"203.0.113.0/24",    // documentation
		"224.0.0.0/4",       // multicast
		"240.0.0.0/4",       // reserved, broadcast
		"::/128",            // unspecified
		"::1/128",           // loopback
		"100::/64",          // discard
		"2001::/23",         // IETF protocol assignments (Teredo, ORCHID…)
		"2001:db8::/32",     // documentation
		"fc00::/7",          // unique local
		"fe80::/10",         // link-local
		"fec0::/10",         // site-local (deprecated)
		"ff00::/8",          // multicast
		"64:ff9b:1::/48",    // local-use IPv4/IPv6 translation
		"::ffff:0:0:0/96",   // SIIT
		"5f00::/16",         // SRv6 SIDs
		"3fff::/20",         // documentation
		"2620:4f:8000::/48", // AS112 DNS delegation
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixto4 = netip.MustParsePrefix("2002::/16")
)

// IsInternal reports whether ip is a special-purpose address the crawler
// refuses unless allowed: loopback, private (RFC 1918, fc00::/7),
// link-local, CGNAT, multicast, unspecified, documentation, benchmarking
// and reserved ranges. An IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4
// address is judged by the IPv4 address it carries.
func IsInternal(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return true
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return IsInternal(netip.AddrFrom4([4]byte(b[12:16])))
		case sixto4.Contains(ip):
			return IsInternal(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, p := range specialPurpose {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// ParsePrefixes parses CIDRs ("10.0.0.0/8", "fd00::/8") and bare
// addresses ("127.0.0.2", as /32 or /128) for Config.AllowPrivate.
func ParsePrefixes(ss []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("crawl: allow-private %q: not a CIDR or an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// guard decides which addresses the crawler may connect to. It is safe for
// concurrent use.
type guard struct {
	allow []netip.Prefix
	// proxies holds the host:port of proxies the environment named
	// (HTTP_PROXY and friends): the operator chose them, so they are
	// dialled wherever they are; the request's own target is checked
	// before it is handed to the proxy.
	proxies sync.Map
}

func newGuard(allow []netip.Prefix) *guard { return &guard{allow: allow} }

// check returns an error wrapping ErrInternalAddress when ip may not be
// connected to.
func (g *guard) check(ip netip.Addr) error {
	if !IsInternal(ip) {
		return nil
	}
	u := ip.WithZone("").Unmap()
	for _, p := range g.allow {
		if p.Contains(u) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s (a node crawls it when started with --allow-private %s)", ErrInternalAddress, ip, u)
}

// checkAddr checks "ip:port", the form a dialer hands its Control hook
// and a connection's RemoteAddr. Anything else is refused.
func (g *guard) checkAddr(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrInternalAddress, address)
	}
	return g.check(ap.Addr())
}

// control is a net.Dialer Control hook: it runs on the resolved address
// of every connection attempt, before the connection is made.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	return g.checkAddr(address)
}

// dialTimeout bounds the dialling of a connection.
const dialTimeout = 10 * time.Second

// dialer returns the crawler's dialer: dial timeout, keep-alive, and the
// address check.
func (g *guard) dialer() *net.Dialer {
	return &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: g.control}
}

// dialContext dials addr with the guarded dialer, or unguarded when addr
// is a proxy the environment named.
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, ok := g.proxies.Load(addr); ok {
		return (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	}
	return g.dialer().DialContext(ctx, network, addr)
}

// wrapDial returns dial with the connected address checked: for a
// Transport the crawler was given, whose dialer it cannot hook. The
// connection is closed before any byte is written when it is refused.
func (g *guard) wrapDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if _, ok := g.proxies.Load(addr); ok {
			return nc, nil
		}
		if err := g.checkAddr(nc.RemoteAddr().String()); err != nil {
			nc.Close()
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		return nc, nil
	}
}

// proxy wraps a Transport's Proxy function: a request that goes through a
// proxy has its target's addresses checked here, since the proxy, not
// this dialer, connects to them, and the proxy's address is remembered as
// the operator's choice. (The proxy resolves the name again: an operator
// who sends the crawl through a proxy should make it refuse internal
// addresses too.)
func (g *guard) proxy(next func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		if next == nil {
			return nil, nil
		}
		p, err := next(req)
		if err != nil || p == nil {
			return p, err
		}
		if err := g.checkHost(req.Context(), req.URL.Hostname()); err != nil {
			return nil, err
		}
		g.proxies.Store(canonicalAddr(p), struct{}{})
		return p, nil
	}
}

// checkHost resolves host and checks every address it has.
func (g *guard) checkHost(ctx context.Context, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.check(ip)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if err := g.check(ip); err != nil {
			return err
		}
	}
	return nil
}

// canonicalAddr is the host:port a Transport dials for a proxy URL.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// guardClient returns a copy of a client the crawler was given whose
// connections are checked: an *http.Transport (or nil, the default one)
// is cloned with its dialers wrapped (guard.wrapDial) and its Proxy
// wrapped (guard.proxy); any other RoundTripper is wrapped in one that
// checks the resolved addresses of each request's host first (weaker: a
// name whose DNS answer changes between that look-up and the Transport's
// own is not caught).
func (g *guard) guardClient(c *http.Client) *http.Client {
	cc := *c
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok {
		t = t.Clone()
		dial := t.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
		}
		t.DialContext = g.wrapDial(dial)
		if t.DialTLSContext != nil {
			t.DialTLSContext = g.wrapDial(t.DialTLSContext)
		}
		t.Proxy = g.proxy(t.Proxy)
		cc.Transport = t
		return &cc
	}
	cc.Transport = roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if err := g.checkHost(req.Context(), req.URL.Hostname()); err != nil {
			return nil, err
		}
		return rt.RoundTrip(req)
	})
	return &cc
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
