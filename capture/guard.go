package capture

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"

	"github.com/herod-archive/herod/crawl"
)

// ErrScheme is wrapped by the error of a request whose URL is not http
// or https.
var ErrScheme = fmt.Errorf("capture: scheme refused")

// checkAddr applies the crawler's address rule to ip: special-purpose
// addresses (crawl.IsInternal) are refused unless in allow.
func checkAddr(ip netip.Addr, allow []netip.Prefix) error {
	if !crawl.IsInternal(ip) {
		return nil
	}
	u := ip.WithZone("").Unmap()
	for _, p := range allow {
		if p.Contains(u) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", crawl.ErrInternalAddress, ip)
}

// checkURL decides whether the browser may make a request for raw: an
// http(s) URL whose host is, or resolves only to, allowed addresses.
func checkURL(ctx context.Context, raw string, allow []netip.Prefix) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrScheme, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: %q", ErrScheme, u.Scheme)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return checkAddr(ip, allow)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if err := checkAddr(ip, allow); err != nil {
			return err
		}
	}
	return nil
}

// checkRemote checks the address a response came from ("1.2.3.4" or
// "::1", as the browser reports it; "" when it does not know, for a
// response from its cache).
func checkRemote(remote string, allow []netip.Prefix) error {
	if remote == "" {
		return nil
	}
	ip, err := netip.ParseAddr(remote)
	if err != nil {
		if ap, err2 := netip.ParseAddrPort(remote); err2 == nil {
			ip = ap.Addr()
		} else {
			return fmt.Errorf("%w: unparsable address %q", crawl.ErrInternalAddress, remote)
		}
	}
	return checkAddr(ip, allow)
}
