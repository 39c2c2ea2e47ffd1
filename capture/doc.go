// Package capture renders a page in headless Chromium and records what
// the browser fetched to display it (issue 41): the document, its
// subresources, what its scripts fetch and what loads as the page is
// scrolled, each as an Exchange with its body; the links the rendered
// page holds (its anchors' hrefs and the history routes its scripts
// pushed); and a PNG screenshot.
//
// Capturer.Capture starts a browser of its own for each page, with a
// fresh profile in a temporary directory, and kills it and removes the
// directory before it returns. It opens the page, waits for the load
// event, scrolls it to the end a viewport at a time (so that lazy images
// and infinite lists load, up to Config.MaxScrolls steps), waits for the
// network to settle (no request in flight for Config.Quiet, bounded;
// one in flight longer than Config.Stall no longer counts), collects the
// links, scrolls back to the top and takes the screenshot.
//
// Safety. Every request the page makes is paused (DevTools Fetch domain)
// and allowed only when its URL is http or https and every address its
// host resolves to passes the crawler's address rules (crawl.IsInternal,
// with Config.AllowPrivate as the exceptions, as crawl.Config.AllowPrivate
// is): a refused request fails in the browser and is counted in
// Result.Refused. Underneath, the browser's only way out is a proxy the
// capture runs on loopback for that page (every scheme, loopback
// included): it connects only to a host and port an allowed request was
// for (ErrNotRequested otherwise: the browser's own traffic), resolves
// names itself (Config.Resolver) and checks the same rule on the address
// it connects to, so what the interception does not see (WebSockets,
// preconnects, a name whose DNS answer changes after the check) is
// refused there and counted in Result.RefusedConns. Popups are
// blocked, service workers bypassed, WebRTC kept off UDP, downloads
// denied. A page gets Config.Timeout in all, Config.MaxRequests requests,
// Config.MaxBytes bytes of bodies and Config.MaxScrolls scroll steps;
// past a cap further requests fail and Result.Capped says which cap was
// hit.
//
// ToArchive turns a Result into archive.Captures marked as captured in a
// browser (archive.Capture.Browser), stored like any crawled capture.
//
// Concurrency: a Capturer is safe for concurrent use; each Capture runs
// its own browser. The package uses the crawl package's address rule, so
// crawl must not import it: the node is where the two meet.
package capture
