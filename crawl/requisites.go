package crawl

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/herod-archive/herod/internal/webrefs"
)

// RequisiteForwarder is a Forwarder that also delivers page requisites
// (see ExtractRequisites; Deps.Requisites) to their owners, which must hand them to
// Crawler.AddRequisites rather than Add: a requisite with a query string
// is in scope there even while AllowDynamic is off. With a plain
// Forwarder, requisites travel through Forward like other links, and the
// owner's Add refuses the dynamic ones.
type RequisiteForwarder interface {
	Forwarder
	ForwardRequisites(ctx context.Context, urls []string) error
}

// hostReqs counts the dynamic requisites queued for one host on one day.
type hostReqs struct {
	day int64
	n   int
}

// AddRequisites is Add for page requisites that arrived for this node:
// the scope holds but for the dynamic rule, and dynamic requisites (a
// query string or a cgi-bin segment, with AllowDynamic off) count
// against Config.HostRequisites for their host and day; those over it
// are counted as KindRequisites and dropped.
func (c *Crawler) AddRequisites(ctx context.Context, urls []string) error {
	if _, err := c.addChecked(ctx, urls, c.checkRequisite); err != nil {
		return fmt.Errorf("crawl add requisites: %w", err)
	}
	return nil
}

// checkRequisite canonicalizes a requisite and returns it, or the error
// kind that refuses it, counting a dynamic one against its host's day.
func (c *Crawler) checkRequisite(raw string) (string, string) {
	if c.cfg.PageRequisites < 0 {
		return c.scope.check(raw)
	}
	u, dynamic, kind := c.scope.checkReq(raw)
	if kind != "" || !dynamic {
		return u, kind
	}
	if c.cfg.HostRequisites < 0 {
		return "", KindDynamic
	}
	host, day := hostOf(u), c.Today()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.reqHosts[host]
	if h.day != day {
		h = hostReqs{day: day}
	}
	if h.n >= c.cfg.HostRequisites {
		return "", KindRequisites
	}
	h.n++
	if c.reqHosts == nil || len(c.reqHosts) >= 1<<16 {
		c.reqHosts = map[string]hostReqs{} // a new day's hosts, or too many: start afresh
	}
	c.reqHosts[host] = h
	return u, ""
}

// pageLinks extracts the links of a fetched page that the scope admits
// and its requisites that the requisite scope admits: all of them,
// sorted (the page's outlinks), and the requisites among them, sorted. At
// most PageRequisites dynamic requisites are kept (while AllowDynamic is
// off); the rest are counted as KindRequisites.
func (c *Crawler) pageLinks(base *url.URL, ct string, body []byte) (all, reqs []string) {
	dynamic, over := 0, 0
	keepReq := c.keepLink
	if !c.scope.allowDynamic && c.cfg.PageRequisites >= 0 {
		keepReq = func(u *url.URL, s string) (string, bool) {
			s, kind := c.scope.checkRequisite(u, s)
			if kind != "" {
				return "", false
			}
			if isDynamic(u) {
				if dynamic >= c.cfg.PageRequisites {
					over++
					return "", false
				}
				dynamic++
			}
			return s, true
		}
	}
	links, reqs := extractLinks(base, ct, body, c.keepLink, keepReq)
	if over > 0 {
		c.count(KindRequisites, base.String(), fmt.Errorf("%d requisites with a query over the page's %d", over, c.cfg.PageRequisites))
	}
	all = append(slices.Clip(links), reqs...)
	slices.Sort(all)
	return all, reqs
}

// redirectLinks returns the target of a redirect from u (target: none
// or one canonical URL) that the scope admits, and the same as a
// requisite when the redirect is a requisite's: u is dynamic while
// AllowDynamic is off (the scope admitted it as a requisite only), or u
// or the target names a resource by its path (isResourcePath: an image,
// a stylesheet, a script, a font…). A requisite's target is admitted
// with its query and travels to its owner's AddRequisites, which counts
// it against HostRequisites, so that a requisite's redirect chain is
// archived the same day, hop by hop, as the page that embeds it needs.
func (c *Crawler) redirectLinks(u *url.URL, target []string) (links, reqs []string) {
	if len(target) == 0 {
		return nil, nil
	}
	if c.scope.allowDynamic || c.cfg.PageRequisites < 0 {
		return c.inScope(target), nil
	}
	t, err := url.Parse(target[0])
	if err != nil {
		return nil, nil
	}
	req := isDynamic(u) || webrefs.IsResourcePath(u.Path, "", false) || webrefs.IsResourcePath(t.Path, "", false)
	if !req {
		return c.inScope(target), nil
	}
	s, kind := c.scope.checkRequisite(t, target[0])
	if kind != "" {
		return nil, nil
	}
	return []string{s}, []string{s}
}

// forward hands a page's fresh links to the Forwarder: the requisites
// among them (reqs, sorted) through Deps.Requisites when it is set,
// everything else through Forward.
func (c *Crawler) forward(ctx context.Context, fresh, reqs []string) error {
	rf := c.deps.Requisites
	if rf == nil || len(reqs) == 0 {
		return c.f.Forward(ctx, fresh)
	}
	var nav, req []string
	for _, l := range fresh {
		if _, found := slices.BinarySearch(reqs, l); found {
			req = append(req, l)
		} else {
			nav = append(nav, l)
		}
	}
	if len(nav) > 0 {
		if err := c.f.Forward(ctx, nav); err != nil {
			return err
		}
	}
	if len(req) > 0 {
		if err := rf.ForwardRequisites(ctx, req); err != nil {
			return fmt.Errorf("forward requisites: %w", err)
		}
	}
	return nil
}
