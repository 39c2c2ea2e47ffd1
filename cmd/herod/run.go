package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/settings"
	"github.com/herod-archive/herod/node"
	"github.com/herod-archive/herod/node/p2phost"
)

// crawlFlags are the politeness and identity flags shared by run and demo.
type crawlFlags struct {
	contact, from      string
	hostRate           float64
	concurrency        int
	allowDynamic       bool
	timeout            time.Duration
	maxBody            byteSize
	allowHosts, denies listFlag
	allowPrivate       listFlag
	denyTypes          listFlag
	keepNoArchive      bool
}

func (c *crawlFlags) register(fs *flag.FlagSet, defaultRate float64) {
	fs.StringVar(&c.contact, "contact", "", "contact URL or e-mail for site owners, sent in the User-Agent")
	fs.StringVar(&c.from, "from", "", "e-mail address sent in the From header")
	fs.Float64Var(&c.hostRate, "host-rate", defaultRate, "requests per second to any one web host")
	fs.IntVar(&c.concurrency, "concurrency", 8, "concurrent fetches")
	fs.BoolVar(&c.allowDynamic, "allow-dynamic", false, "also crawl URLs with query strings and cgi-bin paths")
	durationVar(fs, &c.timeout, "timeout", 30*time.Second, "timeout of one fetch")
	c.maxBody = 10 << 20
	fs.Var(&c.maxBody, "max-body", "largest body fetched, in bytes (k, M, Mi suffixes)")
	fs.Var(&c.allowHosts, "allow-host", "crawl only these hosts (repeatable)")
	fs.Var(&c.denies, "deny-host", "never crawl these hosts (repeatable)")
	fs.Var(&c.denyTypes, "deny-type", "never store responses of this media type, type/subtype or type/* (repeatable; every type is stored by default, up to --max-body)")
	fs.BoolVar(&c.keepNoArchive, "keep-noarchive", false, "archive pages that ask archives not to keep them (X-Robots-Tag or robots meta tag noarchive); by default they are not archived, their links still followed")
	fs.Var(&c.allowPrivate, "allow-private", "let the crawler reach this internal address range, CIDR or address (loopback, 10/8, 192.168/16, fc00::/7, ...), refused by default; for archiving a LAN (repeatable)")
}

func (c *crawlFlags) config() (crawl.Config, error) {
	allow, err := crawl.ParsePrefixes(c.allowPrivate)
	if err != nil {
		return crawl.Config{}, fmt.Errorf("--allow-private: %w", err)
	}
	cc := crawl.Config{
		AllowPrivate:  allow,
		From:          c.from,
		Concurrency:   c.concurrency,
		HostRate:      c.hostRate,
		Timeout:       c.timeout,
		MaxBody:       int64(c.maxBody),
		AllowDynamic:  c.allowDynamic,
		AllowHosts:    c.allowHosts,
		DenyHosts:     c.denies,
		DenyTypes:     c.denyTypes,
		KeepNoArchive: c.keepNoArchive,
	}
	if c.contact != "" {
		cc.UserAgent = fmt.Sprintf("herod/0.1 (+%s)", c.contact)
	}
	return cc, nil
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "run [flags] [URL…]", stderr)
	var rs runSettings
	rs.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := rs.resolve(fs, settings.LookupEnv); err != nil {
		return err
	}
	cfg, err := rs.nodeConfig(stderr)
	if err != nil {
		return err
	}
	if w := contactWarning(rs.crawl.contact); w != "" {
		cfg.Logger.Warn(w) // in the log format chosen (--log-format json)
	}
	defer startCPUProfile(stderr)()
	join, data := rs.join, rs.data
	urls := rs.urls
	for {
		n, err := node.New(cfg)
		if err != nil {
			return startError(err)
		}
		if err := n.Start(ctx); err != nil {
			n.Close()
			return startError(err)
		}
		fmt.Fprintf(stdout, "herod node running\n  ring:    %s (%s)\n  gateway: %s (archived pages from %s)\n  admin token: %s\n  others join with: --join %s\n",
			n.Contact().Addr, n.Status().Reach, n.GatewayURL(), n.ReplayURL(), filepath.Join(data, gateway.AdminTokenFile), n.Multiaddr())
		if via := n.JoinedVia(); via != "" {
			fmt.Fprintf(stdout, "joined the ring through %s: %s\n", via, plural(n.RingNodes(), "node"))
		} else if len(cfg.Join) == 0 {
			fmt.Fprintln(stdout, "started a new ring: 1 node (others join it with the --join above)")
		}
		if len(urls) > 0 {
			res, err := n.SeedEach(ctx, urls)
			if err == nil {
				err = printSeed(stdout, res)
			}
			if err != nil {
				fmt.Fprintf(stderr, "herod run: seeding the URLs given: %v; the node runs on\n", err)
			}
			urls = nil
		}
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

// startError adds to an error that stops a node from starting what the
// operator can do about it.
func startError(err error) error {
	var port *p2phost.PortInUseError
	var join *node.JoinError
	switch {
	case errors.As(err, &port):
		return fmt.Errorf("%v; stop it, or give this node another port with --listen", port)
	case errors.As(err, &join):
		return fmt.Errorf("%v; check --join (a member's `herod status` prints its join address), or leave --join out to start a new ring", join)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w; stop the program on that port, or choose other ports with --gateway and --replay-addr", err)
	}
	return err
}

// plural writes "1 node" or "3 nodes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// exampleDomains are the domains reserved for examples and documentation
// (RFC 2606, RFC 6761): a contact there reaches nobody.
var exampleDomains = []string{"example.com", "example.org", "example.net", "example", "test", "invalid", "localhost", "local"}

// contactWarning returns why --contact gives site owners nobody to write
// to — empty, a template's sample address, an example or local domain —
// or "".
func contactWarning(contact string) string {
	const fix = "set --contact to a page about your crawl or an address you read (--contact https://your.site/herod or --contact you@your.domain)"
	c := strings.TrimSpace(contact)
	if c == "" {
		return "no --contact: site owners see no way to reach you in the User-Agent, and many block crawlers that give none; " + fix
	}
	host := c
	local := ""
	if u, err := url.Parse(c); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if at := strings.LastIndexByte(c, '@'); at >= 0 {
		local, host = strings.TrimPrefix(strings.ToLower(c[:at]), "mailto:"), c[at+1:]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case local == "you" || local == "your-name" || local == "yourname" || local == "user" || local == "name",
		host == "" || strings.HasPrefix(host, "your"):
		return fmt.Sprintf("--contact %s is a sample address from a template, not yours; %s", c, fix)
	}
	for _, d := range exampleDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return fmt.Sprintf("--contact %s is at %s, a domain that reaches nobody; %s", c, d, fix)
		}
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified()) {
		return fmt.Sprintf("--contact %s is an address site owners cannot reach; %s", c, fix)
	}
	return ""
}
