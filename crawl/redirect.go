package crawl

import (
	"context"
	"fmt"
	"slices"
)

// A redirect chain is a trap when it never ends: each answer names a new
// URL that redirects again. The crawler stores every redirect answer (the
// URL's record that day) and follows its target as a new queue entry,
// usually owned by another node, so a bound per fetch would bound nothing.
// Instead each queue entry carries its redirect depth, the number of
// redirects that led to it (0 for a link or a seed), in its queue value
// and in its known-set value (so a new day queues it with the same depth),
// and a redirect's target travels with depth+1 (RedirectSender). A
// target whose depth would pass MaxRedirects is not followed and is
// counted as KindRedirectChain.

// maxRedirectDepth is the largest depth the queue records (one byte).
const maxRedirectDepth = 255

// RedirectSender delivers a redirect's target, with the number of
// redirects that led to it, to the node that owns it, which hands it to
// Crawler.AddRedirect. The node implements it; nil in Config means
// targets go through the Forwarder like links.
type RedirectSender interface {
	// SendRedirect delivers target (canonical, in scope) reached through
	// depth redirects (depth >= 1); req tells that it is a page requisite
	// (see AddRequisites). It returns once the owner has queued it (or
	// refused it as seen or over a cap); an error leaves it undelivered.
	SendRedirect(ctx context.Context, target string, depth int, req bool) error
}

// AddRedirect is Add for a redirect's target that arrived for this node,
// reached through depth redirects: it is queued with that depth, so that
// its own redirect, if any, is followed only while depth < MaxRedirects.
// req tells that it is a page requisite (AddRequisites' scope applies).
// A depth over MaxRedirects is refused (KindRedirectChain) and not an
// error.
func (c *Crawler) AddRedirect(ctx context.Context, target string, depth int, req bool) error {
	if depth < 1 {
		return fmt.Errorf("crawl add redirect: depth %d", depth)
	}
	if depth > c.cfg.MaxRedirects {
		c.count(KindRedirectChain, target, fmt.Errorf("redirect chain of %d, over %d", depth, c.cfg.MaxRedirects))
		return nil
	}
	check := c.scope.check
	if req {
		check = c.checkRequisite
	}
	if _, err := c.addDepth(ctx, []string{target}, check, depth); err != nil {
		return fmt.Errorf("crawl add redirect: %w", err)
	}
	return nil
}

// followRedirect hands on the fresh target of the redirect answer of an
// entry reached through depth redirects: with depth+1 through
// Config.Redirects, or through the Forwarder when none is set. A target
// past MaxRedirects is counted and dropped. It returns how many targets
// it handed on.
func (c *Crawler) followRedirect(ctx context.Context, raw string, fresh, reqs []string, depth int) (int, error) {
	if len(fresh) == 0 {
		return 0, nil
	}
	next := depth + 1
	if next > c.cfg.MaxRedirects {
		for _, t := range fresh {
			c.count(KindRedirectChain, t, fmt.Errorf("redirect of %s: chain of %d, over %d", raw, next, c.cfg.MaxRedirects))
		}
		return 0, nil
	}
	if c.cfg.Redirects == nil {
		return len(fresh), c.forward(ctx, fresh, reqs)
	}
	for _, t := range fresh {
		_, req := slices.BinarySearch(reqs, t)
		if err := c.cfg.Redirects.SendRedirect(ctx, t, next, req); err != nil {
			return 0, fmt.Errorf("send redirect target: %w", err)
		}
	}
	return len(fresh), nil
}
