package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node"
)

// crawlFlags are the politeness and identity flags shared by run and demo.
type crawlFlags struct {
	contact, from      string
	hostRate           float64
	concurrency        int
	allowDynamic       bool
	timeout            time.Duration
	maxBody            int64
	allowHosts, denies listFlag
	allowPrivate       listFlag
	denyTypes          listFlag
}

func (c *crawlFlags) register(fs *flag.FlagSet, defaultRate float64) {
	fs.StringVar(&c.contact, "contact", "", "contact URL or e-mail for site owners, sent in the User-Agent")
	fs.StringVar(&c.from, "from", "", "e-mail address sent in the From header")
	fs.Float64Var(&c.hostRate, "host-rate", defaultRate, "requests per second to any one web host")
	fs.IntVar(&c.concurrency, "concurrency", 8, "concurrent fetches")
	fs.BoolVar(&c.allowDynamic, "allow-dynamic", false, "also crawl URLs with query strings and cgi-bin paths")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "timeout of one fetch")
	fs.Int64Var(&c.maxBody, "max-body", 10<<20, "largest body fetched, in bytes")
	fs.Var(&c.allowHosts, "allow-host", "crawl only these hosts (repeatable)")
	fs.Var(&c.denies, "deny-host", "never crawl these hosts (repeatable)")
	fs.Var(&c.denyTypes, "deny-type", "never store responses of this media type, type/subtype or type/* (repeatable; every type is stored by default, up to --max-body)")
	fs.Var(&c.allowPrivate, "allow-private", "let the crawler reach this internal address range, CIDR or address (loopback, 10/8, 192.168/16, fc00::/7, ...), refused by default; for archiving a LAN (repeatable)")
}

func (c *crawlFlags) config() (crawl.Config, error) {
	allow, err := crawl.ParsePrefixes(c.allowPrivate)
	if err != nil {
		return crawl.Config{}, fmt.Errorf("--allow-private: %w", err)
	}
	cc := crawl.Config{
		AllowPrivate: allow,
		From:         c.from,
		Concurrency:  c.concurrency,
		HostRate:     c.hostRate,
		Timeout:      c.timeout,
		MaxBody:      c.maxBody,
		AllowDynamic: c.allowDynamic,
		AllowHosts:   c.allowHosts,
		DenyHosts:    c.denies,
		DenyTypes:    c.denyTypes,
	}
	if c.contact != "" {
		cc.UserAgent = fmt.Sprintf("herod/0.1 (+%s)", c.contact)
	}
	return cc, nil
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "run [flags]", stderr)
	data := fs.String("data", defaultDataDir(), "data directory: archive, crawl queue, identity, admin token")
	listen := fs.String("listen", node.DefaultListen, "ring address ip:port (TCP, and QUIC on the same port); virtual-server ids derive from it")
	addrTimeout := fs.Duration("addr-timeout", node.DefaultAddrTimeout, "with --listen 0.0.0.0:PORT, how long to wait for the router's UPnP/NAT-PMP port mapping before joining through a relay")
	announce := fs.String("announce", "", "public ip:port other members reach this node at, for a port forwarded by hand (default: --listen, or the port the router maps by UPnP/NAT-PMP when --listen is 0.0.0.0:PORT)")
	noRelay := fs.Bool("no-relay-service", false, "do not relay connections for other members (circuit relay v2)")
	var join, seeds, authorities listFlag
	fs.Var(&authorities, "purge-authority", "peer id whose purge orders this node carries out for any peer (repeatable; default: only a peer's retraction of its own captures, and this node's own herod purge)")
	fs.Var(&join, "join", "multiaddr of a ring member to join through (repeatable)")
	fs.Var(&seeds, "seed", "URL to start crawling from (repeatable)")
	vnodes := fs.Int("vnodes", node.DefaultVirtualServers, "virtual servers: ring positions, in proportion to disk and bandwidth")
	gw := fs.String("gateway", "", "gateway listen address (default: ring ip, ring port + gateway-offset)")
	offset := fs.Int("gateway-offset", node.DefaultGatewayOffset, "gateway port = ring port + this")
	replay := fs.String("replay-addr", "", "listen address of the origin that serves archived pages (default: gateway ip, gateway port + 1)")
	gwOrigin := fs.String("gateway-origin", "", "origin browsers reach the gateway at, http://host:port, when not its listen address (default: the host name each request came with)")
	rpOrigin := fs.String("replay-origin", "", "origin browsers reach the replay address at, http://host:port (default: the host name each request came with)")
	publicStatus := fs.Bool("public-status", false, "serve /api/status, /ring and /metrics to anyone (default: this machine and holders of the admin token only)")
	frameless := fs.Bool("frameless", false, "replay pages without the gateway's frame, the banner inside the archived page (where its scripts can reach it)")
	day := fs.Duration("day", node.DefaultDayLength, "length of a crawl day: every known URL is fetched again once per day")
	quota := fs.Int64("quota", 0, "archive disk quota in bytes (0: unlimited)")
	replInterval := fs.Duration("replication-interval", node.DefaultReplicationInterval, "period of replication rounds with the ring neighbours (a ring change starts one sooner)")
	verbose := fs.Bool("v", false, "verbose logs")
	var cf crawlFlags
	cf.register(fs, 1)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *replInterval <= 0 {
		return fmt.Errorf("--replication-interval %s: want a positive duration", *replInterval)
	}
	cc, err := cf.config()
	if err != nil {
		return err
	}
	cfg := node.Config{
		DataDir: *data, Listen: *listen, Announce: *announce, AddrTimeout: *addrTimeout, NoRelayService: *noRelay, Join: join, VirtualServers: *vnodes,
		Seeds: seeds, Gateway: *gw, GatewayOffset: *offset, DayLength: *day,
		Replay: *replay, GatewayOrigin: *gwOrigin, ReplayOrigin: *rpOrigin,
		PublicStatus: *publicStatus, Frameless: *frameless, PurgeAuthorities: authorities,
		Quota: *quota, ReplicationInterval: *replInterval, Crawl: cc, Logger: logger(stderr, *verbose),
	}
	for {
		n, err := node.New(cfg)
		if err != nil {
			return err
		}
		if err := n.Start(ctx); err != nil {
			n.Close()
			return err
		}
		fmt.Fprintf(stdout, "herod node running\n  ring:    %s (%s)\n  gateway: %s (archived pages from %s)\n  admin token: %s\n  others join with: --join %s\n",
			n.Contact().Addr, n.Status().Reach, n.GatewayURL(), n.ReplayURL(), filepath.Join(*data, gateway.AdminTokenFile), n.Multiaddr())
		select {
		case <-ctx.Done():
			fmt.Fprintln(stdout, "leaving the ring…")
			return n.Close()
		case addr := <-n.AddressChanged():
			// The ids derive from the old address: leave, and join again
			// at the new one through the members this node knew.
			fmt.Fprintf(stdout, "public address changed to %s: leaving the ring to join again there\n", addr)
			cfg.Join = append(n.Members(), join...)
			cfg.Seeds = nil
			if err := n.Close(); err != nil {
				fmt.Fprintf(stderr, "herod run: leaving: %v\n", err)
			}
		}
	}
}
