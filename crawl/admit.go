package crawl

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/canon"
)

// admitLookupTimeout bounds Admit's DNS look-up of a seed's host.
const admitLookupTimeout = 2 * time.Second

// Admit checks a seed before it is handed to the ring, by this crawler's
// policy: the scope rules Add applies (KindBadURL, KindTooLong,
// KindDynamic, KindTrap, KindHostDenied) and the addresses the fetch
// would connect to (KindInternal: a literal address, localhost, or, when
// the crawler dials itself, what DNS answers within a short deadline). It
// returns the canonical URL, or the kind that refuses it and a detail:
// the refused address for KindInternal, the host for KindHostDenied. A
// seed refused here is not queued, so it is not in the day's URL-seen
// set: seeded again after the setting changes, it is crawled the same
// day. A name that does not resolve is admitted (the fetch reports it),
// and so is a name of which some address is public.
func (c *Crawler) Admit(ctx context.Context, raw string) (canonical, kind, detail string) {
	u, kind := c.scope.check(raw)
	if kind != "" {
		if c, err := canon.Canonical(raw); err == nil && kind == KindHostDenied {
			detail = hostOf(c)
		}
		return "", kind, detail
	}
	host := hostOf(u)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	var addrs []netip.Addr
	switch a, err := netip.ParseAddr(host); {
	case err == nil:
		addrs = []netip.Addr{a}
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	case c.cfg.Client == nil:
		lctx, cancel := context.WithTimeout(ctx, admitLookupTimeout)
		addrs, _ = net.DefaultResolver.LookupNetIP(lctx, "ip", host)
		cancel()
	}
	for _, a := range addrs {
		if c.guard.check(a) == nil {
			return u, "", ""
		}
	}
	if len(addrs) > 0 {
		return "", KindInternal, addrs[0].Unmap().String()
	}
	return u, "", ""
}
