package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"
)

// maxSeedLookups bounds the URLs of one seed request whose captures
// SeedEach looks up in the ring (for "fetched today"); later ones are
// queued without the look-up, and their owner drops those it has
// already visited today.
const maxSeedLookups = 100

// seedLookupTimeout bounds each of those look-ups.
const seedLookupTimeout = 3 * time.Second

// Seed canonicalizes urls and hands them to the ring, which delivers each to
// its owner (SeedEach). URLs refused are reported together; the others are
// still seeded.
func (n *Node) Seed(ctx context.Context, urls []string) error {
	res, err := n.SeedEach(ctx, urls)
	var errs []error
	for _, r := range res {
		if r.Outcome == gateway.SeedRefused {
			errs = append(errs, fmt.Errorf("seed %q: %s", r.URL, r.Reason))
		}
	}
	return errors.Join(append(errs, err)...)
}

// SeedEach is Seed saying what became of each URL, in order: refused by
// this node's crawl policy (not a URL, out of scope, an internal address
// without --allow-private: the reason names the flag), already fetched
// today (the ring has a capture of today's crawl day, or its owner
// checked it today and found it unchanged: when, and when the next day
// starts), or queued. Only queued URLs are handed to the
// ring, so a refused one is not marked seen for the day anywhere and is
// crawled the same day once the setting allows it and it is seeded again.
// The error reports a failure to hand the queued URLs to the ring.
func (n *Node) SeedEach(ctx context.Context, urls []string) ([]gateway.SeedResult, error) {
	res := make([]gateway.SeedResult, len(urls))
	var good []string
	today := n.crawler.Today()
	for i, u := range urls {
		r := &res[i]
		r.URL = u
		c, err := canon.Canonical(u)
		if err != nil {
			r.Outcome, r.Reason = gateway.SeedRefused, fmt.Sprintf("not an http or https URL (%v)", err)
			continue
		}
		r.Canonical = c
		if _, kind, detail := n.crawler.Admit(ctx, c); kind != "" {
			r.Outcome, r.Reason = gateway.SeedRefused, refusalReason(kind, detail)
			continue
		}
		if i < maxSeedLookups {
			if t, ok := n.seedFetchedOn(ctx, c, today); ok {
				r.Outcome, r.Fetched = gateway.SeedFetchedToday, t
				r.Next = time.Unix((today+1)*int64(n.cfg.DayLength/time.Second), 0).UTC()
				continue
			}
		}
		r.Outcome = gateway.SeedQueued
		good = append(good, c)
	}
	if len(good) == 0 {
		return res, nil
	}
	if err := n.fwd.Forward(ctx, good); err != nil {
		return res, fmt.Errorf("seed: %w", err)
	}
	return res, nil
}

// seedFetchedOn returns when url was fetched on crawl day day, when the
// ring knows: its newest capture, or its owner's newest check that found
// it unchanged.
func (n *Node) seedFetchedOn(ctx context.Context, url string, day int64) (time.Time, bool) {
	lctx, cancel := context.WithTimeout(ctx, seedLookupTimeout)
	defer cancel()
	vs, err := n.resolve.Versions(lctx, url)
	if err != nil || len(vs) == 0 {
		return time.Time{}, false
	}
	if v := vs[len(vs)-1]; n.crawler.Day(v.Time) == day {
		return v.Time.UTC(), true
	}
	cs, err := n.resolve.Checks(lctx, url)
	if err != nil || len(cs) == 0 || n.crawler.Day(cs[len(cs)-1]) != day {
		return time.Time{}, false
	}
	return cs[len(cs)-1].UTC(), true
}

// refusalReason says why the crawl policy refuses a seed (crawl.Admit's
// kind and detail) and which `herod run` flag changes it.
func refusalReason(kind, detail string) string {
	switch kind {
	case crawl.KindInternal:
		flag := detail
		if a, err := netip.ParseAddr(detail); err == nil && a.Is6() {
			flag = a.String() + "/128"
		}
		return fmt.Sprintf("its host is at %s, an internal address the crawler refuses; to archive it, restart the node with --allow-private %s", detail, flag)
	case crawl.KindDynamic:
		return "it has a query string or a cgi-bin path; restart the node with --allow-dynamic to crawl such URLs"
	case crawl.KindHostDenied:
		return fmt.Sprintf("host %s is refused by the node's --deny-host or is not in its --allow-host list", detail)
	case crawl.KindTrap:
		return "its path repeats a segment too often or is too deep (a likely crawler trap)"
	case crawl.KindTooLong:
		return "it is longer than the crawler's URL length limit"
	case crawl.KindBadURL:
		return "not an absolute http or https URL"
	}
	return "refused by the crawl policy (" + kind + ")"
}
