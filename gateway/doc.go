// Package gateway is herod's Wayback-compatible HTTP front end: the form,
// the list of dates a URL was archived, dated replay with links rewritten
// into the archive, Memento (RFC 7089) timemaps and timegates, a pywb-style
// CDX query API, a resumable WARC export stream, the ring page, JSON status
// and Prometheus metrics, and the operator's admin endpoint.
//
// # Two origins
//
// Archived pages were written by others, some of them hostile, so the
// gateway answers on two origins (Config.UIOrigin, Config.ContentOrigin;
// Server.UI and Server.Content are their handlers). The UI origin serves
// the gateway's own pages and endpoints and never an archived byte; a
// replay there is a page of its own holding the banner and a sandboxed
// iframe of the content origin's replay (framed replay; Config.Frameless
// puts the banner back into the archived document). The frame's sandbox
// lets no document in it open a window or navigate the top window; links,
// forms and window.open bound there ask the framed page (herod:open in
// ui.js), which opens archive pages alone, with no opener. A PDF, which
// Chromium's viewer refuses to show in a sandboxed frame, is framed
// without the attribute as its archived bytes (shownByBrowser); every
// document of the content origin carries its sandbox in its own CSP, so
// that frame is as sandboxed as the others. The content
// origin serves archived captures and the replay script, under a
// Content-Security-Policy that keeps everything a page loads on the
// content origin, and nothing else. Admin endpoints need the admin token
// (LoadAdminToken) and refuse requests from other origins; status pages
// are private unless Config.PublicStatus.
//
// The gateway owns no data. Everything it shows comes through the Archive
// interface (and the optional Lister, Pager, Exporter and Streamer, which
// serves large replies of captures it holds straight from its files),
// which the node
// implements by routing each URL to the ring node that owns it, and through
// the Status and Ring callbacks of Config.
//
// # URL scheme (stable, shared with Wayback and pywb)
//
// The URLs each origin answers are listed once, in docs/gateway.md
// ("URLs"): on the UI origin the form, the calendar (/web/*/<url>), the
// framed replay (/web/<ts>/<url>), Memento, the CDX API (cdx.go), exports
// (exportformats.go), status and the admin endpoints; on the content
// origin the replay itself (/web/<ts>/<url>, and /web/<ts>id_/<url> for
// the archived bytes) and the replay script. routes.go dispatches them.
//
// A timestamp <ts> has 1 to 14 digits, YYYYMMDDhhmmss, naming a whole
// second, and up to 3 more naming its milliseconds (VersionTimestamp
// writes them for captures that share a second). A timestamp names the
// end of its period, padded as pywb pads it (see ParseTimestamp): "2014"
// is 2014-12-31 23:59:59.999999999 UTC, a 14-digit one the last instant
// of its second.
// Out-of-range fields are clamped. Replay serves the newest version not
// newer than that instant, or the oldest version when every version is
// newer. Links in a replayed document keep the timestamp as the reader
// wrote it, so a whole visit stays at one date. The modifier after the
// timestamp follows pywb: id_ serves the payload unchanged; if_ and fr_
// (used for frame sources) rewrite without the banner; any other
// two-letter modifier (im_, cs_, js_, mp_…) is accepted and rewrites, with
// the banner (frameless mode only) for "" and mp_.
//
// Scripts (and inline JavaScript <script>s) keep every byte but the
// specifiers of static module imports that would leave the archive, which
// point into it, and each dynamic import(, which calls the replay script
// with the importing script's archived URL (Rewriter.JS).
//
// Every rewritten HTML reply loads the replay script (replay.js, served at
// /static/replay.js) before its first element that can run a script. In
// framed replay it also answers the framed page's nonce-bearing question
// about where the frame is (see ui.js), asks it to open what would leave
// the frame for a new window or the top, and refuses service worker
// registrations. It rewrites the URLs the page's scripts make at run time
// so that they too are answered from the archive at the same timestamp:
// fetch, XMLHttpRequest and sendBeacon get id_; import() resolves against
// the importing script; navigations of the document (location
// assignments, seen through the Navigation API), history.pushState and
// window.open keep to the archive; element src/href/... properties,
// setAttribute, markup written with innerHTML, outerHTML,
// insertAdjacentHTML and document.write, and Worker and SharedWorker
// script URLs are rewritten as the server would. A request for a path
// that is not the gateway's own, whose Referer is a replayed page of this
// gateway, is redirected (307) to that path on the page's archived site
// at the page's timestamp.
//
// The <url> part may arrive with "http://" collapsed to "http:/" by proxies
// or path cleaners, or with no scheme at all (http is assumed), as Wayback
// accepts; the query string of the request belongs to the archived URL. The
// result is put in canonical form with internal/canon; schemes other than
// http and https are refused with 400.
//
// A URL without a capture of its own is matched fuzzily (fuzzy.go, with
// rules kept as data in fuzzy.json): cache-buster and tracking
// parameters and timestamps are ignored, and so is the order of
// parameters; failing an equal URL, the capture of the same scheme, host
// and path with the most similar query is served, never one of another
// path. The candidates are the URL without its query (Versions) and, with
// a Lister, the first 100 versions of URLs under "<path>?" (one List).
// A reply served so carries X-Archive-Fuzzy (FuzzyHeader) with the URL
// whose capture it is, and the banner's JSON a "fuzzy" field.
//
// Redirect captures (3xx) keep their status; their Location is rewritten
// into the archive at the same timestamp and modifier (id_ included), so a
// chain of redirects never leaves the archive. When the target replayed at
// that timestamp would be older than the redirect while the target was
// captured within a day after it (the crawl fetched the redirect, then its
// target), the Location names that capture's timestamp instead: a page
// reached through a redirect is found from either URL (redirect.go).
//
// Serve UI and Content (or a Server, which dispatches by Host) directly as
// an http.Server's Handler (or strip a prefix yourself): http.ServeMux would answer /web/2014/http://x with a
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
//   - No archived byte is served on the UI origin, and nothing of the UI
//     (status, admin, the banner) on the content origin.
//   - Archived responses never set cookies or other state on either
//     origin: their headers are passed through an allow list (the body's
//     type, language and disposition, a rewritten Location), others are
//     renamed X-Archive-Orig-<name>.
//   - Every content origin reply carries a Content-Security-Policy that
//     allows only the content origin (plus inline, data: and blob:
//     resources), no plugins, forms within the archive, and framing by
//     the archive and the UI origin only: what neither the rewriting nor
//     the replay script reaches (URLs that workers' own scripts make,
//     say) is blocked, never fetched from the live web. Documents that do not run
//     the replay script (id_ payloads, SVG, XML, error pages) are
//     sandboxed without scripts; rewritten HTML of a framing gateway
//     carries the content frame's sandbox (frameSandbox); programs are
//     attachments, never sniffed;
//     service worker scripts are refused (403).
//   - The admin endpoint acts only for a request that carries the admin
//     token and that no browser marks as coming from another origin.
//   - Every call into the Archive carries the request's context with the
//     configured deadline.
//   - What readers take is bounded (Limits, limits.go): requests in
//     flight (503 with Retry-After past them), Archive.Get calls in
//     flight, bytes of bodies held while replies are prepared (budget.go,
//     spool.go: large replies are served from unlinked spool files, and
//     shared by the readers of one replay, replycache.go), a progress
//     write deadline on every reply (deadline.go), exports per node
//     and per client, and each remote client's request rate (429 with
//     Retry-After) and export and CDX bytes/s (paced) in a bounded table
//     of clients (clients.go).
//   - Access rules, and under Config.Robots each site's current
//     robots.txt, decide at one point what every surface shows, lists
//     and exports (access.go, robots.go).
//   - A request relayed by a proxy (a forwarding header, forwarded.go) is
//     never "this machine".
//
// # Concurrency
//
// A Server is immutable after New (but for its atomic counters, its
// limits' state and its shared replies, each behind its own lock) and safe
// for concurrent use by any number of requests; Stats may be read at any
// time. It calls the Archive, Lister, Exporter, Status, Ring and Seed
// concurrently from request goroutines; those must be safe for that.
package gateway
