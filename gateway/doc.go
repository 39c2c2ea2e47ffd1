// Package gateway is herod's Wayback-compatible HTTP front end: the form,
// the list of dates a URL was archived, dated replay with links rewritten
// into the archive, Memento (RFC 7089) timemaps and timegates, a pywb-style
// CDX query API, a resumable WARC export stream, the ring page, JSON status
// and Prometheus metrics.
//
// The gateway owns no data. Everything it shows comes through the Archive
// interface (and the optional Lister and Exporter), which the node
// implements by routing each URL to the ring node that owns it, and through
// the Status and Ring callbacks of Config.
//
// # URL scheme (stable, shared with Wayback and pywb)
//
//	/                                the form (url, optional date)
//	/web/*/<url>                     dates the URL was archived
//	/web/*/<url-prefix>*             (with a Lister) URLs under a prefix
//	/web/<ts>/<url>                  replay, links rewritten to /web/<ts>/…
//	/web/<ts>id_/<url>               the archived payload, byte for byte
//	/web/<url>                       302 to the newest capture
//	/timemap/link/<url>              RFC 7089 TimeMap (application/link-format)
//	/timegate/<url>                  RFC 7089 TimeGate (Accept-Datetime)
//	/cdx?url=…                       pywb CDX server API subset
//	/export?host=…|prefix=…          WARC stream (with an Exporter; &revisits=1 adds revisit records)
//	/ring                            the ring: SVG picture and table
//	/static/replay.js                the replay script rewritten pages load
//	/api/status                      JSON from Config.Status
//	/metrics                         Config.Metrics
//
// A timestamp <ts> has 1 to 14 digits, YYYYMMDDhhmmss; further digits (up
// to 17: some archives write milliseconds) are ignored. A partial timestamp
// names the end of a period, padded as pywb pads it (see ParseTimestamp):
// "2014" is 2014-12-31 23:59:59 UTC, "201402" is 2014-02-28 23:59:59.
// Out-of-range fields are clamped. Replay serves the newest version not
// newer than that instant, or the oldest version when every version is
// newer. Links in a replayed document keep the timestamp as the reader
// wrote it, so a whole visit stays at one date. The modifier after the
// timestamp follows pywb: id_ serves the payload unchanged; if_ and fr_
// (used for frame sources) rewrite without the banner; any other
// two-letter modifier (im_, cs_, js_, mp_…) is accepted and rewrites, with
// the banner only for "" and mp_.
//
// Every rewritten HTML reply loads the replay script (replay.js, served at
// /static/replay.js) before its first element that can run a script. It
// rewrites the URLs the page's scripts make at run time (fetch and
// XMLHttpRequest get id_, history.pushState and window.open the page's own
// modifier or none, element src/href/… properties and setAttribute as the
// server would) so that they too are answered from the archive at the
// same timestamp. A request for a path that is not the gateway's own, whose
// Referer is a replayed page of this gateway, is redirected (307) to that
// path on the page's archived site at the page's timestamp: root-relative
// URLs in markup that scripts write land in the archive too.
//
// The <url> part may arrive with "http://" collapsed to "http:/" by proxies
// or path cleaners, or with no scheme at all (http is assumed), as Wayback
// accepts; the query string of the request belongs to the archived URL. The
// result is put in canonical form with internal/canon; schemes other than
// http and https are refused with 400.
//
// Redirect captures (3xx) keep their status; their Location is rewritten
// into the archive at the same timestamp and modifier (id_ included), so a
// chain of redirects never leaves the archive.
//
// Serve a Server directly as an http.Server's Handler (or strip a prefix
// yourself): http.ServeMux would answer /web/2014/http://x with a
// redirect to the "cleaned" path /web/2014/http:/x. That form is still
// understood, at the price of a round trip.
//
// # Invariants
//
//   - Everything the gateway renders itself is escaped by html/template
//     (the replay script's tag, built by hand, escapes its two attribute
//     values with html.EscapeString).
//   - Rewriting changes only the URLs it rewrites (and inserts the replay
//     script and the banner); every other byte of an archived document is
//     kept.
//   - Archived responses never set cookies or other origin state on the
//     gateway's origin: their headers are passed through an allow list,
//     others are renamed X-Archive-Orig-<name>.
//   - Rewritten replies carry a Content-Security-Policy that allows only
//     the gateway's own origin (plus inline and data: resources): what
//     neither the rewriting nor the replay script reaches, such as markup
//     scripts write as text, is blocked, never fetched from the live web.
//     id_ replies are served as archived.
//   - Every call into the Archive carries the request's context with the
//     configured deadline.
//
// # Concurrency
//
// A Server is immutable after New (but for its atomic counters) and safe
// for concurrent use by any number of requests; Stats may be read at any
// time. It calls the Archive, Lister, Exporter, Status and Ring
// concurrently from request goroutines; those must be safe for that.
package gateway
