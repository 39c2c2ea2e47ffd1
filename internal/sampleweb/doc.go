// Package sampleweb serves a deterministic sample web on loopback for
// herod's demo, end-to-end tests and benchmarks, and knows, without
// crawling, what a crawler must find in it on any day.
//
// # What it serves
//
// Config.Hosts hosts (default 3); host i listens on 127.0.0.(i+2), so each
// host is a distinct address, and the crawler's per-host politeness sees
// distinct hosts. Day 0 has Config.Pages HTML pages (default 600) spread
// over the hosts; every later day each host gains Config.NewPagesPerDay
// pages (default 2), each linked from one older page. Per host:
//
//	/                      the root page (page 0)
//	/<section>/<n>.html    page n, section = news|docs|blog|wiki|shop|about (n mod 6)
//	/img/logo.png          on every page, and url() of /css/site.css
//	/img/<k>.png|gif|svg   30 images, real PNG, GIF and SVG bytes
//	/css/site.css, /css/<section>.css   stylesheets; every url() in them is
//	                       also an <img> of the pages that use them
//	/js/app.js, /js/<section>.js        scripts
//	/robots.txt            disallows /private/ (which pages do link to) for
//	                       every agent, and / for the agent "herod-test-banned";
//	                       Config.CrawlDelay adds a Crawl-delay, Config.RobotsStatus
//	                       makes it answer 4xx (allow all) or 5xx (disallow all)
//	/private/<k>.html      200, but disallowed: a polite crawler never asks
//	/moved.html            301 to page base-1, which nothing else links to
//	/missing/<k>.html      404, linked from a few pages
//	/search?q=<w>&lang=en  dynamic page; pages also link to ?session= URLs
//
// Pages are 2.5–27 KB of Zipf-distributed made-up words (gzip to about 42%),
// with 6–24 links each written root-relative, relative ("../docs/5.html"),
// absolute, or with a fragment; about 10% of page links go to other hosts;
// some pages embed an <iframe>.
//
// # How it changes
//
// Everything is a pure function of (Seed, day) and the hosts' addresses
// (absolute links contain host:port, so bytes are identical across runs
// only for the same ports). Each day about 3% of pages change their text,
// each mortal link disappears with probability 0.4%, new pages appear and
// links to new pages sometimes disappear later. A page, once born, is
// served for ever, linked or not. A body changes exactly on the days one of
// those events touches it; otherwise it is byte-identical to the day
// before. Every response carries a strong ETag (SHA-1 of the body) and
// Last-Modified (Config.Epoch + the day the body last changed); 200
// responses answer If-None-Match and If-Modified-Since with 304. A crawler
// must send back the Last-Modified it received, not its own clock, since
// the web's dates are fictional.
//
// # What it predicts
//
// Reachable, ReachableDynamic and NewVersions compute, from the model and
// not from the served bytes, what a complete crawl reaches and stores on a
// day; the tests crawl the running server with net/http and goquery and
// check that both agree. Reachable includes 404 links and /moved.html
// (a crawler requests them) but not robots.txt, disallowed paths or URLs
// with a query; ReachableDynamic adds the latter. Status and Body answer
// single URLs without a request. Requests records every request served
// (up to Config.MaxRequests of the latest), for politeness tests.
//
// For crawl-rate benchmarks, WriteStaticSite writes a one-host static site
// (only pages, images, stylesheets and scripts: no traps) to a directory,
// and StaticServer serves that directory, so wget and herod fetch the same
// bytes.
//
// # Concurrency
//
// All methods of Web and StaticServer are safe for concurrent use. SetDay
// takes effect for requests that start after it returns. Constant assets
// and rendered pages are cached (pages by host, number and last-change
// day, up to 32 MiB), so serving a day's crawl costs little CPU.
package sampleweb
