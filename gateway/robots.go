package gateway

import (
	"context"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
)

// RobotsPolicy is the replay policy of Config.Robots: a site's current
// robots.txt decides whether its captures are shown, as the Wayback
// Machine once did. The node passes its crawler (crawl.Crawler), which
// answers from the robots.txt it obeys and fetches one only through its
// guarded client.
type RobotsPolicy interface {
	// ReplayAllowed reports whether the current robots.txt of url's site
	// lets the node's crawler fetch url, and when that file was fetched.
	// A site that is unreachable or has no robots.txt allows. On error
	// the capture is shown (the error is counted).
	ReplayAllowed(ctx context.Context, url string) (allowed bool, fetched time.Time, err error)
}

// robotsStatus is the HTTP status of a capture the site's robots.txt
// keeps from readers: the server understood the request and refuses it,
// not for a legal demand (451).
const robotsStatus = 403

// decide returns the decision for the capture of url made at t: the
// access rules', and, when no rule applies and Config.Robots is set, a
// block when the site's current robots.txt disallows url. A rule that
// applies wins over robots.txt: an operator's allow shows what the
// site's robots.txt disallows.
func (g *guarded) decide(ctx context.Context, url string, t time.Time) access.Decision {
	if page, ok := archive.ScreenshotPage(url); ok {
		url = page // a screenshot is shown as its page is
	}
	var d access.Decision
	if g.rules != nil {
		d = g.rules.Decide(url, t)
	}
	if g.robots == nil || d.Rule != nil {
		return d
	}
	ok, fetched, err := g.robots.ReplayAllowed(ctx, url)
	if err != nil {
		g.robotsErrors.Add(1)
		return d
	}
	if ok {
		return d
	}
	why := "the site's robots.txt disallows it"
	if !fetched.IsZero() {
		why = "the site's robots.txt, as fetched on " + fetched.UTC().Format("2 Jan 2006") + ", disallows it"
	}
	return access.Decision{Action: access.Block, Rule: &access.Rule{URL: url, Exact: true, Action: access.Block, Status: robotsStatus, Reason: why}}
}

// exportHider is the cdx.Query.Hide of one export: the guarded archive's
// decisions, with the export's context for robots.txt look-ups.
type exportHider struct {
	ctx context.Context
	g   *guarded
}

// Hidden implements cdx.Hider: every capture not shown.
func (h *exportHider) Hidden(url string, t time.Time) bool {
	if h.g.decide(h.ctx, url, t).Shown() {
		return false
	}
	h.g.hidden.Add(1)
	return true
}
