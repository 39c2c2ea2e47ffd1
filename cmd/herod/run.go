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
	"github.com/herod-archive/herod/internal/settings"
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
	join, data := rs.join, rs.data
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
			n.Contact().Addr, n.Status().Reach, n.GatewayURL(), n.ReplayURL(), filepath.Join(data, gateway.AdminTokenFile), n.Multiaddr())
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
