// Package crawl fetches the URLs a node owns, once per day, politely, and
// hands every link it finds to a Forwarder.
//
// Requests go through a net/http client (NewClient; Config.Client), whose
// dialer refuses internal addresses (netguard.go). There is no special
// machinery for speed: on the realistic benchmark (many hosts, 20-80 ms
// a request; scripts/bench-realistic.sh) a hand-written HTTP/1.1 client,
// low-priority processing workers, spare processors and a tuned garbage
// collector each cost CPU per page rather than saved it, and none raised
// pages/s by 10% (docs/crawl.md, "Measured"), so the crawler computes in
// its fetch goroutines with the runtime's defaults.
//
// It owns the node's crawl queue and URL-seen set (one goleveldb database
// in the directory given to New), the fetch loop, robots.txt handling,
// per-host pacing, the URL scope rules and link extraction. It does not
// decide who owns a URL (Config.Owns and the Forwarder, both supplied by
// the node, do) and it does not store pages (the Archive does).
//
// # Data flow
//
// Add(urls) → canonicalize and scope check → URL-seen test → durable
// per-host FIFO → host loop (robots.txt, budget wait) → conditional GET →
// archive Put → ExtractRequisites → links absent from the previous version →
// Forwarder.Forward → the owners' Add; requisites (what the page embeds)
// → RequisiteForwarder.ForwardRequisites → the owners' AddRequisites.
//
// # Invariants
//
//   - Durability: Add returns after the queued URLs are synced to disk
//     (concurrent Adds share one fsync: group commit). A queue entry is
//     deleted only after its fetch has finished, so a crash or Close loses
//     nothing: the next Start fetches every remaining entry (an entry
//     finished just before a crash may be fetched once more); with
//     Config.WriteCopies above 1, a fetch that stored a new version
//     finishes only once that many copies exist or its bounded wait ends
//     (copies.go). The URL-seen
//     set is the day each URL was last queued, so it survives a restart
//     within the day and resets at NewDay with one write. A NewDay cut
//     short by a crash is finished by the next Start.
//   - Daily cycle (thesis, "daily crawls"): NewDay resets the seen set and the queue
//     pointer; every known URL this node owns is queued again and fetched
//     with If-None-Match / If-Modified-Since from its CrawlState. Known
//     means in the queue database or, with Deps.Lister, stored in the
//     archive: a range's new owner holds its versions as a
//     replica, so every URL the range ever stored is fetched again. A URL
//     without a crawl state of its own gets one derived from its newest
//     version with Deps.Versions. (New takes its archive and router as
//     Deps: the required Archive and Forwarder, and the optional parties,
//     each nil-able, that switch on exactly the features their fields
//     name.)
//   - Bandwidth (thesis, "optimizations"): a 304 only records the check
//     (Deps.Touch; CrawlState.Checked when the archive keeps no checks or
//     the URL has no version); a 200
//     whose SHA-1 equals CrawlState.Digest stores nothing and forwards
//     nothing; a new version forwards only links absent from the previous
//     version's outlinks. When Forward fails, the previous CrawlState is
//     kept, so the next visit sees the change again and retries: links are
//     not lost.
//   - Redirects are stored as versions; the Location target is a link.
//     Error answers (4xx, 5xx) are stored as versions too (a deleted page
//     replays as its 404 from then on, and the URL stays in the archive for
//     the range's next owner); their links are not followed. An answer is
//     unchanged only when its status and payload digest both equal the
//     CrawlState's.
//   - Politeness: a host's robots.txt is consulted before every request
//     (RFC 9309: cached up to RobotsTTL, first 500 KiB parsed, 4xx allows
//     all, 5xx or unreachable disallows all and is retried after
//     RobotsTTL/24); every request, robots.txt included, first waits on the
//     HostBudget (HostRate per host by default, slowed further by
//     Crawl-delay); at most Concurrency fetches per node and HostConns per
//     host run at once. Every request carries the User-Agent and, when set,
//     From.
//   - Scope: URLs longer than MaxURLLen, dynamic URLs (query string or
//     cgi-bin, unless AllowDynamic), paths deeper than MaxDepth or with a
//     segment repeated more than MaxRepeat times, and hosts outside the
//     allow/deny lists are refused both when extracted and when added.
//     Page requisites are exempt from the dynamic rule alone, within
//     PageRequisites per page and HostRequisites per host and day.
//     Responses of a type in DenyTypes (or outside ContentTypes, when
//     that allow list is set) or above MaxBody are not stored; every
//     other type is stored as served.
//   - No internal addresses: every connection (pages, robots.txt and
//     its redirects, proxied requests, a supplied Client's) is checked on
//     the address it connects to, after DNS resolution; loopback,
//     private, link-local, CGNAT, multicast, unspecified and other
//     special-purpose addresses (IsInternal) are refused unless in
//     AllowPrivate, and counted as KindInternal (netguard.go).
//   - Nothing fails silently: every refusal or failure is counted by kind
//     in Stats.ErrorsByKind and the first of each kind is logged at Warn
//     (at Info when it is a URL the site's robots.txt disallows — the
//     crawler obeying the site — or a 4xx or 5xx answer, which is archived;
//     a robots.txt that could not be had is still a Warn).
//
// # Ring-wide hooks
//
// Two interfaces let the node make politeness hold for the whole ring
// rather than per node.
//
// RobotsSource: the node implements it by asking the owner of the
// canonical URL origin+"/robots.txt"; the owner answers from
// Crawler.RobotsRecord, its own cache, so each file is fetched once per
// RobotsTTL ring-wide and every node parses the same bytes (the record's
// Fetched time travels with it, so no node keeps it longer than the
// owner's TTL). When the owner is this node or cannot be reached, the
// implementation should fall back to HTTPRobots (or to the crawler's own
// RobotsRecord) rather than return an error: an error counts as an
// unreachable site and disallows the host for RobotsTTL/24.
//
// HostBudget: NewSharedBudget divides the per-host rate by the ring size
// estimate, so the aggregate of all nodes stays within the budget without
// any message (at most one request per node can coincide at the start).
// Package politeness implements both hooks for a ring: one robots.txt
// fetch and one leased request schedule per host, kept by the node that
// owns the host's key.
//
// # Concurrency
//
// All methods of Crawler are safe for concurrent use. Start launches one
// goroutine per host with pending URLs, at most MaxActiveHosts at a time
// (a loop exits when its host has nothing pending, and yields its turn
// after each batch of 32 URLs when other hosts wait),
// fetch goroutines (at most Concurrency with a request under way, at most
// HostConns per host, at most 64*Concurrency in all, holding at most
// 4*MaxBody bytes of bodies while they process them: hashing, link
// extraction, storing and forwarding happen in the fetch's goroutine
// after its request slot is released, while the page still counts in
// Stats.InFlight, keeps Idle false and keeps its queue entry), a day
// timer, and the queue's committer; Close cancels
// them, waits for them and closes the database. Forward is called from
// fetch goroutines, without any crawler lock held, so a Forwarder may call
// Add.
package crawl
