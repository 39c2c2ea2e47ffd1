package node

import "net/netip"

// loopback is the crawl allow-list of tests whose sample web listens on
// 127.0.0.x: a node refuses those addresses by default
// (crawl.Config.AllowPrivate).
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
