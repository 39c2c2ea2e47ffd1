// Package realweb serves a sample web that answers as the internet does,
// for benchmarks of the crawler: many hosts, each at its own loopback
// address (host i listens on 127.0.0.(i+2)), every response delayed by 20-80
// ms before its headers, some bodies trickled over about a second and one
// large object per host.
//
// The latency comes from the server (the handler waits before it answers)
// rather than from tc netem on a veth pair: the benchmark then needs no
// root, no network namespace and no change to the loopback interface,
// which other processes on the machine share, and every run sees the same
// delays (a pure function of host and path, see Delay). What it does not
// model is latency per TCP round trip: a new connection costs no extra
// delay, so the figures favour a client that opens connections freely
// over one that keeps them alive, and not the other way round.
//
// # What it serves
//
// Per host, Config.Pages HTML pages /p/<n>.html (6-20 KB, "/" is page 0),
// each linking to the next page (so that every page is reachable from the
// root), to five other pages of its host, to one page of another host, to
// the host's stylesheet /css/site.css and to one of its three images
// /img/<k>.png; page 5 also links to /img/big.png (1.5 MiB). One page in
// 25 is slow: its body arrives in 16 pieces over about a second. Every
// response carries an ETag and Last-Modified; robots.txt allows everything.
// Objects returns the number of URLs a complete crawl fetches.
//
// Spawn runs the web in a process of its own, a test binary's test that
// calls Serve (a benchmark keeps the site's CPU out of the crawler's
// figures); Start runs it in the caller's.
package realweb
