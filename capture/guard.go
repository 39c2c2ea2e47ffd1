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
func checkURL(ctx context.Context, raw string, allow []netip.Prefix, res *net.Resolver) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrScheme, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: %q", ErrScheme, u.Scheme)
	}
	host := u.Hostname()
	_, err = resolve(ctx, host, allow, res)
	return err
}

// resolve returns the addresses of host (an IP address or a name), or
// an error when one of them is refused.
func resolve(ctx context.Context, host string, allow []netip.Prefix, res *net.Resolver) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, checkAddr(ip, allow)
	}
	ips, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if err := checkAddr(ip, allow); err != nil {
			return nil, err
		}
	}
	return ips, nil
}
