package crawl

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
)

// BrowserPage is a page the crawler fetched, changed since its last
// version, and is about to store: what Deps.Browser is offered.
type BrowserPage struct {
	URL    string // canonical
	Status int
	Header http.Header
	Body   []byte
	// Links are the page's links the crawler found in its HTML (in
	// scope, canonical, sorted), requisites included; Requisites are
	// those among them.
	Links, Requisites []string
	Time              time.Time // when the crawler received it
}

// BrowserCapture is what rendering a page stored and found.
type BrowserCapture struct {
	// Stored reports that the page's document is in the archive as
	// captured in a browser (its owner is this node): the crawler then
	// stores no capture of its own, only the crawl state.
	Stored bool
	// Links are the absolute links of the rendered page: its DOM's
	// anchors and the history routes its scripts pushed.
	Links []string
}

// Browser renders the pages it chooses among those the crawler fetched
// (package node/render): it returns ok == false for a page it leaves to
// the crawler, which stores it as fetched.
type Browser interface {
	Render(ctx context.Context, p BrowserPage) (c BrowserCapture, ok bool)
}

// browse offers a fetched page that changed to Deps.Browser, before it is
// stored. When the browser stored the page, the crawler forwards the
// rendered page's links it had not (through the scope, as any links),
// records the crawl state with every link as outlinks and reports the
// outcome (done true); otherwise the page is stored as fetched (done
// false). prev are the outlinks of the page's previous crawl state: a
// rendered link among them was forwarded before.
func (c *Crawler) browse(ctx context.Context, raw string, resp *http.Response, body []byte, p processed, prev []string, next archive.CrawlState, now time.Time) (outcome, bool) {
	b := c.deps.Browser
	if b == nil || p.noarchive || resp.StatusCode/100 != 2 {
		return 0, false
	}
	bc, ok := b.Render(ctx, BrowserPage{URL: raw, Status: resp.StatusCode, Header: resp.Header, Body: body,
		Links: p.links, Requisites: p.reqs, Time: now})
	if !ok || !bc.Stored {
		if ctx.Err() != nil {
			return abandoned, true
		}
		return 0, false
	}
	var extra []string
	for _, l := range c.inScope(bc.Links) {
		if _, found := slices.BinarySearch(p.links, l); !found {
			extra = append(extra, l)
		}
	}
	slices.Sort(extra)
	extra = slices.Compact(extra)
	fresh := newLinks(extra, prev)
	if len(fresh) > 0 {
		if err := c.forward(ctx, fresh, nil); err != nil {
			if ctx.Err() != nil {
				return abandoned, true
			}
			c.count(KindForward, raw, err)
		} else {
			c.mu.Lock()
			c.st.forwarded += int64(len(fresh))
			c.mu.Unlock()
		}
	}
	next.Outlinks = append(slices.Clone(next.Outlinks), extra...)
	slices.Sort(next.Outlinks)
	next.Outlinks = slices.Compact(next.Outlinks)
	if err := c.a.SetState(ctx, raw, next); err != nil {
		return c.archiveErr(ctx, raw, err), true
	}
	c.countStored(true)
	return stored, true
}
