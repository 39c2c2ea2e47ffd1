package crawl

import (
	"context"
	"errors"
	"fmt"

	"github.com/herod-archive/herod/archive"
)

// LinksInto lists the links of the pages this node crawled — the
// outlinks of the crawl state of every known URL — whose URL in accepts,
// each once: links the scope admits, and apart the page requisites it
// admits only as such (a query string; their owner queues them with
// AddRequisites). After a take-over every node re-forwards them, so that
// a URL linked only from a page that never changes reaches the range's
// new owner (node/forward's AnnounceTakeOver).
func (c *Crawler) LinksInto(ctx context.Context, in func(url string) bool) (links, reqs []string, err error) {
	done, err := c.begin()
	if err != nil {
		return nil, nil, err
	}
	defer done()
	seen := map[string]bool{}
	err = c.q.knownURLs(func(page string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := c.a.State(ctx, page)
		if errors.Is(err, archive.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, l := range st.Outlinks {
			if seen[l] || !in(l) {
				continue
			}
			seen[l] = true
			switch _, kind := c.scope.check(l); kind {
			case "":
				links = append(links, l)
			case KindDynamic:
				reqs = append(reqs, l)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("crawl links into: %w", err)
	}
	return links, reqs, nil
}
