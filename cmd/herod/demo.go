package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"time"

	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/node"
)

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "demo [flags]", stderr)
	nodes := fs.Int("nodes", 3, "nodes in the local ring")
	vnodes := fs.Int("vnodes", 4, "virtual servers per node")
	hosts := fs.Int("hosts", 3, "web hosts in the sample web (127.0.0.2, 127.0.0.3, …)")
	pages := fs.Int("pages", 600, "HTML pages in the sample web on day 0")
	var dayLen time.Duration
	durationVar(fs, &dayLen, "day", 5*time.Minute, "length of a crawl day; the sample web changes every day")
	data := fs.String("data", "", "data directory (default: a temporary one, removed on exit)")
	verbose := fs.Bool("v", false, "verbose logs")
	var cf crawlFlags
	cf.register(fs, 50)
	if err := parse(fs, args); err != nil {
		return err
	}
	// Warnings, or everything with -v; errors only once the demo stops.
	level := new(slog.LevelVar)
	level.Set(slog.LevelWarn)
	if *verbose {
		level.Set(slog.LevelDebug)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cc, err := cf.config()
	if err != nil {
		return err
	}
	dir := *data
	if dir == "" {
		tmp, err := os.MkdirTemp("", "herod-demo-")
		if err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}

	web := sampleweb.New(sampleweb.Config{Hosts: *hosts, Pages: *pages, Logger: log.With("sub", "sampleweb")})
	startDay := time.Now().Unix() / int64(dayLen/time.Second)
	if err := web.Start(ctx); err != nil {
		return fmt.Errorf("sample web: %w", err)
	}
	defer web.Close()
	fmt.Fprintf(stdout, "sample web: %d hosts, %d pages on day 0\n", *hosts, *pages)
	for _, s := range web.Seeds() {
		fmt.Fprintf(stdout, "  %s\n", s)
	}

	// The sample web listens on loopback, which a crawler refuses by
	// default: the demo opens exactly the sample web's addresses.
	for _, s := range web.Seeds() {
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("sample web seed %q: %w", s, err)
		}
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil {
			return fmt.Errorf("sample web seed %q: %w", s, err)
		}
		cc.AllowPrivate = append(cc.AllowPrivate, netip.PrefixFrom(a, a.BitLen()))
	}
	lr, err := startLocalRing(ctx, dir, *nodes, node.Config{
		VirtualServers:    *vnodes,
		DayLength:         dayLen,
		StabilizeInterval: 300 * time.Millisecond,
		FlushInterval:     50 * time.Millisecond,
		// Days are minutes long here: the link index is swept as often,
		// so "pages linking here" fills while one watches.
		LinkSweep: 30 * time.Second,
		Crawl:     cc,
		Logger:    log,
	})
	if err != nil {
		return err
	}
	defer lr.Close()
	fmt.Fprintf(stdout, "ring: %d nodes × %d virtual servers; waiting for it to settle…\n", *nodes, *vnodes)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = lr.waitStable(waitCtx)
	cancel()
	if err != nil {
		return err
	}
	if err := lr.nodes[0].Seed(ctx, web.Seeds()); err != nil {
		return err
	}
	seeded := time.Now()
	seed := web.Seeds()[0]
	fmt.Fprintln(stdout, "\nopen the archive in a browser (any node answers any URL):")
	for _, n := range lr.nodes {
		fmt.Fprintf(stdout, "  %s\n", n.GatewayURL())
	}
	gw := lr.nodes[0].GatewayURL()
	fmt.Fprintf(stdout, "  (archived pages themselves come from %s, framed under the gateway's banner)\n", lr.nodes[0].ReplayURL())
	fmt.Fprintf(stdout, "  dates of the first page:  %sweb/*/%s\n", gw, seed)
	fmt.Fprintf(stdout, "  the page as archived now: %sweb/%s/%s\n\n", gw, time.Now().UTC().Format("20060102150405"), seed)
	fmt.Fprintf(stdout, "crawling; a new day (and a changed sample web) every %s; Ctrl-C to stop\n\n", dayLen)

	err = demoProgress(ctx, stdout, lr, web, dayLen, startDay, seeded)
	if !*verbose {
		level.Set(slog.LevelError) // the nodes leave one another as they stop: no news
	}
	return err
}

// webDay is the sample web's day at t: crawl days since start, switched a
// little before the crawlers' own day boundary so a new day's crawl sees the
// new web.
func webDay(t time.Time, dayLen time.Duration, startDay int64) int {
	lead := dayLen / 50
	return int((t.Add(lead).Unix())/int64(dayLen/time.Second) - startDay)
}

// demoProgress shows per-node crawl progress until ctx ends: redrawn in
// place on a terminal, appended elsewhere (demoView).
func demoProgress(ctx context.Context, stdout io.Writer, lr *localRing, web *sampleweb.Web, dayLen time.Duration, startDay int64, seeded time.Time) error {
	tty := isTerminal(stdout)
	every := 2 * time.Second
	if tty {
		every = 500 * time.Millisecond
	}
	nextDay := func(now time.Time) time.Time {
		lead := dayLen / 50
		d := dayLen / time.Second
		return time.Unix((now.Add(lead).Unix()/int64(d)+1)*int64(d), 0).Add(-lead)
	}
	v := newDemoView(stdout, tty, seeded, nextDay(seeded))
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(stdout, "\nstopping…")
			return nil
		case <-tick.C:
		}
		now := time.Now()
		if d := webDay(now, dayLen, startDay); d != web.Day() {
			web.SetDay(d)
			v.newDay(now, d, len(web.NewVersions(d)), nextDay(now))
		}
		rows := make([]demoRow, len(lr.nodes))
		for i, n := range lr.nodes {
			st := n.Status()
			rows[i] = demoRow{Gateway: n.GatewayURL(), Queued: int64(st.Crawl.Queued), Fetched: st.Crawl.FetchedToday, New: st.Crawl.NewVersions,
				NotMod: st.Crawl.NotModified, Unchg: st.Crawl.Unchanged, Errors: st.Crawl.ErrorsByKind, Stored: st.Archive.Versions,
				Idle: st.Idle, DayStarted: st.Crawl.DayStarted}
		}
		v.update(now, rows)
	}
}
