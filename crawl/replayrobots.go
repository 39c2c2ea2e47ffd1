package crawl

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// ReplayAllowed reports whether the current robots.txt of rawURL's
// origin lets this crawler's agent fetch rawURL: the policy by which the
// Wayback Machine once hid the captures a site's robots.txt disallowed
// at replay time. The file is the one the crawler obeys (Config.Robots:
// in a ring, the copy the node that owns it fetched through its guarded
// client and shares for RobotsTTL), fetched only when no current copy is
// cached. Only a file the site serves (2xx) can refuse: a site that is
// unreachable, answers an error or has no robots.txt allows, so that a
// dead site's captures stay shown. fetched is when the file was fetched
// (zero when none was had). The error is ctx's, or rawURL's when it is
// not an http(s) URL.
func (c *Crawler) ReplayAllowed(ctx context.Context, rawURL string) (allowed bool, fetched time.Time, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return true, time.Time{}, fmt.Errorf("crawl replay robots: not an http(s) URL: %q", rawURL)
	}
	e, err := c.robots.get(ctx, u.Scheme+"://"+u.Host)
	if err != nil {
		return true, time.Time{}, fmt.Errorf("crawl replay robots: %w", err)
	}
	if e.err != nil || e.rec.Status < 200 || e.rec.Status >= 300 {
		return true, e.rec.Fetched, nil
	}
	return e.rules.Allowed(pathQuery(u)), e.rec.Fetched, nil
}
