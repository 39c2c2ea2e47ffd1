package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// A reverse proxy on the node's own machine (nginx proxy_pass
// http://127.0.0.1:…, Caddy reverse_proxy) connects from a loopback
// address and may pass the Host it was asked for, or an IP address: by
// its connection alone, every request it relays would look local. Proxies
// say that they relay: nginx and Caddy set X-Forwarded-For or X-Real-IP
// when configured the usual way, Caddy and many others Forwarded, and
// X-Forwarded-Host / -Proto. A request that carries any of these is
// remote, wherever its connection comes from, so status and admin stay
// private behind a proxy (docs/operations.md shows the proxy settings
// that guarantee a forwarding header on every request).

// forwardingHeaders are the headers by which proxies say that a request
// was relayed.
var forwardingHeaders = []string{
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
	"X-Forwarded-Server", "X-Real-Ip", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip", "Via",
}

// forwarded reports whether r says it was relayed by a proxy.
func forwarded(r *http.Request) bool {
	for _, k := range forwardingHeaders {
		if _, ok := r.Header[k]; ok {
			return true
		}
	}
	return false
}

// local reports whether r comes from this machine itself, not relayed:
// a loopback connection without forwarding headers.
func local(r *http.Request) bool { return fromLoopback(r) && !forwarded(r) }

// clientKey names r's client for the per-client limits: its remote
// address, or, for a request relayed by a proxy on this machine, the
// address the proxy says it relayed (the last X-Forwarded-For entry, the
// one the proxy itself added, else X-Real-IP), so that readers behind a
// local proxy are not one client. A remote connection is never believed
// about another address.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.IsLoopback() {
		return host
	}
	if xs := r.Header.Values("X-Forwarded-For"); len(xs) > 0 {
		parts := strings.Split(xs[len(xs)-1], ",")
		if a, err := netip.ParseAddr(strings.TrimSpace(parts[len(parts)-1])); err == nil {
			return a.String()
		}
	}
	if a, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-Ip"))); err == nil {
		return a.String()
	}
	return host
}
