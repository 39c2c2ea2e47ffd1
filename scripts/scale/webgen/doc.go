// Command webgen serves the scale benchmark's synthetic web (docs/scale.md)
// on loopback: many hosts, one listener each on an address of
// 127.77.0.0/16, pages of realistic sizes with links, and a daily change
// rate, all a function of a seed and the day so that every run serves the
// same bytes.
//
// The web has -urls pages on day 0, spread over -hosts hosts. Each later
// day d (set with POST /day?d=N on the control address), every live page
// changes with probability -change (5%), disappears for good with
// probability -gone (1%), and -new (2%) of -urls new pages appear, linked
// from their host's front page that day. A page's links are two pages of
// its host (a tree over the day-0 pages, so that every one is reachable
// from the front page) and -links pages of any host; a changed page gets a
// new body and new cross links. Bodies are text of a 2 MiB word corpus at
// a page- and version-dependent offset; sizes are log-normal (median 12
// KiB, 1-256 KiB). Answers carry an ETag, and If-None-Match gets 304.
//
// Usage:
//
//	webgen -urls 10000 -seed 1 -control 127.0.0.1:0 -addrs FILE
//
// It writes, one a line, the control URL and then every host's root URL
// to -addrs (stdout when empty), and serves until killed. Control:
// POST /day?d=N sets the day; GET /stats answers the day's counters and the
// number of live pages as JSON.
package main
