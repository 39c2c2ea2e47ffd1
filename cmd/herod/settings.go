package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/herod-archive/herod/gateway"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/settings"
	"github.com/herod-archive/herod/node"
	"github.com/herod-archive/herod/ring"
)

// envPrefix starts the environment variable of every setting of herod
// run: --host-rate is HEROD_HOST_RATE.
const envPrefix = "HEROD_"

// runSettings are the flags of herod run (and herod config, which prints
// them), each also settable from the environment and the --config file.
type runSettings struct {
	config                  string
	data, listen, announce  string
	addrTimeout             time.Duration
	noRelay                 bool
	join, seeds, purgeAuth  listFlag
	rebalance               time.Duration
	vnodes                  int
	gateway, replay         string
	offset                  int
	gwOrigin, rpOrigin      string
	publicStatus, frameless bool
	replayRobots            bool
	day                     time.Duration
	quota                   byteSize
	diskReserve             byteRate
	replInterval            time.Duration
	handOffHold             time.Duration
	replicas                int
	writeCopies             int
	download, upload        byteRate
	gwMaxRequests           int
	gwMemory                byteSize
	exportRate              byteRate
	serveRate               float64
	serveBurst              int
	replShare               float64
	logFormat               string
	verbose                 bool
	crawl                   crawlFlags
	hostNewURLs             int
	urls                    []string // URL arguments of herod run, seeded once it runs
	accessRules             string   // --access-rules (access.go)
	browser                 browserFlags
	resolved                []settings.Setting
	sourceOf                map[string]settings.Setting
}

func (s *runSettings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.config, "config", "", "TOML file of settings: keys are flag names (host-rate = 2); flags win over HEROD_* variables, which win over the file")
	fs.StringVar(&s.data, "data", defaultDataDir(), "data directory: archive, crawl queue, identity, admin token")
	fs.StringVar(&s.listen, "listen", node.DefaultListen, "ring address ip:port (TCP, and QUIC on the same port); virtual-server ids derive from it")
	fs.StringVar(&s.announce, "announce", "", "public ip:port other members reach this node at, for a port forwarded by hand (default: --listen, or the port the router maps by UPnP/NAT-PMP when --listen is 0.0.0.0:PORT)")
	durationVar(fs, &s.addrTimeout, "addr-timeout", node.DefaultAddrTimeout, "with --listen 0.0.0.0:PORT, how long to wait for the router's UPnP/NAT-PMP port mapping before joining through a relay")
	fs.BoolVar(&s.noRelay, "no-relay-service", false, "do not relay connections for other members (circuit relay v2)")
	fs.StringVar(&s.accessRules, "access-rules", "", "this node's access rules file, one JSON rule a line, reloaded when it changes (default: access-rules in --data; herod access edits it)")
	fs.Var(&s.purgeAuth, "purge-authority", "peer id whose purge orders this node carries out for any peer (repeatable; default: only a peer's retraction of its own captures, and this node's own herod purge)")
	durationVar(fs, &s.rebalance, "rebalance-interval", node.DefaultRebalanceInterval, "how often the node checks its share of the ring and moves a virtual server for a fairer one (negative: never)")
	fs.Var(&s.join, "join", "multiaddr of a ring member to join through (repeatable)")
	fs.Var(&s.seeds, "seed", "URL to start crawling from (repeatable)")
	fs.IntVar(&s.vnodes, "vnodes", node.DefaultVirtualServers, "virtual servers: ring positions, in proportion to disk and bandwidth")
	fs.StringVar(&s.gateway, "gateway", "", "gateway listen address host:port, apart from the ring's (default: ring ip, ring port + gateway-offset)")
	fs.IntVar(&s.offset, "gateway-offset", node.DefaultGatewayOffset, "gateway port = ring port + this")
	fs.StringVar(&s.replay, "replay-addr", "", "listen address of the origin that serves archived pages (default: gateway ip, gateway port + 1)")
	fs.StringVar(&s.gwOrigin, "gateway-origin", "", "origin browsers reach the gateway at, http://host:port, when not its listen address (default: the host name each request came with)")
	fs.StringVar(&s.rpOrigin, "replay-origin", "", "origin browsers reach the replay address at, http://host:port (default: the host name each request came with)")
	fs.BoolVar(&s.publicStatus, "public-status", false, "serve /api/status, /ring and /metrics to anyone (default: this machine and holders of the admin token only)")
	fs.IntVar(&s.gwMaxRequests, "gateway-max-requests", gateway.DefaultMaxInFlight, "gateway requests handled at once, slow readers included; past it 503 with Retry-After (negative: no limit)")
	s.gwMemory = gateway.DefaultMemoryBudget
	fs.Var(&s.gwMemory, "gateway-memory", "bytes (k, M, G, Mi suffixes) of archived bodies the gateway holds at once while preparing replies; past it 503 with Retry-After")
	s.exportRate = gateway.DefaultExportRate
	fs.Var(&s.exportRate, "export-rate", "bytes/s one client receives from /export and /cdx, paced (k, M, G suffixes); 0: no cap")
	fs.Float64Var(&s.serveRate, "serve-rate", defaultServeRate, "requests/s one remote client may make of the gateway after --serve-burst; past it 429 with Retry-After (0: no limit; this machine is never limited)")
	fs.IntVar(&s.serveBurst, "serve-burst", gateway.DefaultRequestBurst, "requests one remote client may make at once before --serve-rate applies (a page with its images and scripts is some dozens)")
	fs.BoolVar(&s.replayRobots, "replay-robots", false, "hide from readers the captures whose URL the site's current robots.txt disallows for herod (403, a page that says why), as the Wayback Machine once did")
	fs.BoolVar(&s.frameless, "frameless", false, "replay pages without the gateway's frame, the banner inside the archived page (where its scripts can reach it)")
	durationVar(fs, &s.day, "day", node.DefaultDayLength, "length of a crawl day: every known URL is fetched again once per day")
	fs.Var(&s.quota, "quota", "archive disk quota in bytes, with k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti suffixes: 50G (0: unlimited)")
	fs.Var(&s.diskReserve, "disk-reserve", "free space to keep on the archive's file system (k, M, G suffixes; 0: 64 MiB): crawling and replication pause below it and resume by themselves when space returns")
	durationVar(fs, &s.replInterval, "replication-interval", node.DefaultReplicationInterval, "period of replication rounds with the ring neighbours (a ring change starts one sooner)")
	durationVar(fs, &s.handOffHold, "handoff-hold", node.DefaultHandOffHold, "how long a capture another member hands off waits, held and not shown, for this node's own fetch of its URL to confirm its payload before it is dropped")
	fs.IntVar(&s.replicas, "replicas", node.ReplicationFactor, fmt.Sprintf("k: real nodes holding every version, 1 to %d; the same on every node of the ring", node.MaxReplicas))
	fs.IntVar(&s.writeCopies, "write-copies", 1, "w: copies of a new version (this node's and w-1 replicas' confirmed imports) before its fetch counts as done, 1 to --replicas; past 30 s the fetch is done anyway, counted as write_copies")
	fs.Var(&s.download, "download-rate", "download cap in bytes/s (k, M, G suffixes: 2M is 2,000,000 bytes/s) for crawled bodies and replication pulls; 0: none")
	fs.Var(&s.upload, "upload-rate", "upload cap in bytes/s (k, M, G suffixes) for replication replies; 0: none")
	fs.Float64Var(&s.replShare, "replication-share", node.DefaultReplicationShare, "part of each bandwidth cap replication may use, more than 0 and at most 1")
	fs.StringVar(&s.logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.BoolVar(&s.verbose, "v", false, "verbose logs")
	s.crawl.register(fs, 1)
	fs.IntVar(&s.hostNewURLs, "host-new-urls", crawl.DefaultHostNewURLs, "URLs never seen before this node queues per web host per day (a crawler trap's cap; negative: none)")
	s.browser.register(fs)
}

// resolve reads the settings not given as flags from the environment
// (lookup) and the --config file, and validates them all.
func (s *runSettings) resolve(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	if !s.isSet(fs, "config") {
		if v, ok := lookup(settings.EnvName(envPrefix, "config")); ok {
			s.config = v
		}
	}
	res, err := settings.Resolve(fs, envPrefix, s.config, lookup, "config")
	if err != nil {
		return err
	}
	s.resolved = res
	s.sourceOf = map[string]settings.Setting{}
	for _, st := range res {
		s.sourceOf[st.Name] = st
	}
	s.urls = fs.Args()
	return s.validate()
}

func (s *runSettings) isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// bad reports a refused value, naming the setting, its value and source.
func (s *runSettings) bad(name, why string) error {
	st, ok := s.sourceOf[name]
	if !ok {
		return fmt.Errorf("setting %s: %s", name, why)
	}
	from := string(st.Source)
	if st.Origin != "" {
		from += " " + st.Origin
	}
	return fmt.Errorf("setting %s = %s (from %s): %s", name, settings.TOML(st), from, why)
}

// validate refuses values herod cannot run with, each error naming its
// setting; all of them are reported at once.
func (s *runSettings) validate() error {
	var errs []error
	check := func(ok bool, name, why string) {
		if !ok {
			errs = append(errs, s.bad(name, why))
		}
	}
	check(s.data != "", "data", "want a directory")
	check(hostPort(s.listen, true) == nil, "listen", "want ip:port, like 0.0.0.0:4001")
	check(s.announce == "" || hostPort(s.announce, true) == nil, "announce", "want the public ip:port")
	check(s.gateway == "" || hostPort(s.gateway, false) == nil, "gateway", "want host:port")
	check(s.replay == "" || hostPort(s.replay, false) == nil, "replay-addr", "want host:port")
	check(s.offset > 0 && s.offset < 65536, "gateway-offset", "want 1 to 65535")
	check(originOK(s.gwOrigin), "gateway-origin", "want http://host:port or https://host")
	check(originOK(s.rpOrigin), "replay-origin", "want http://host:port or https://host")
	check(s.vnodes >= 1 && s.vnodes <= ring.DefaultMaxVirtualServers, "vnodes", fmt.Sprintf("want 1 to %d", ring.DefaultMaxVirtualServers))
	check(s.day >= time.Second, "day", "want 1s or more")
	check(s.quota >= 0, "quota", "want bytes, 0 for no quota")
	check(s.gwMaxRequests != 0, "gateway-max-requests", "want 1 or more, negative for no limit")
	check(s.gwMemory > 0, "gateway-memory", "want bytes, more than 0")
	check(s.serveRate >= 0 && !math.IsInf(s.serveRate, 0), "serve-rate", "want requests per second, 0 for no limit")
	check(s.serveBurst >= 1, "serve-burst", "want 1 or more requests")
	check(s.replInterval > 0, "replication-interval", "want a positive duration")
	check(s.handOffHold > 0, "handoff-hold", "want a positive duration")
	check(s.addrTimeout > 0, "addr-timeout", "want a positive duration")
	check(s.replicas >= 1 && s.replicas <= node.MaxReplicas, "replicas", fmt.Sprintf("want 1 to %d", node.MaxReplicas))
	check(s.writeCopies >= 1 && s.writeCopies <= s.replicas, "write-copies", "want 1 to --replicas")
	check(s.replShare > 0 && s.replShare <= 1, "replication-share", "want more than 0, at most 1")
	check(s.logFormat == "text" || s.logFormat == "json", "log-format", "want text or json")
	check(s.crawl.hostRate > 0 && !math.IsInf(s.crawl.hostRate, 0), "host-rate", "want requests per second, more than 0")
	check(s.crawl.concurrency >= 1, "concurrency", "want 1 or more")
	check(s.crawl.timeout > 0, "timeout", "want a positive duration")
	check(s.crawl.maxBody > 0, "max-body", "want bytes, more than 0")
	check(s.hostNewURLs != 0, "host-new-urls", "want a number of URLs, negative for no cap")
	errs = append(errs, s.browser.validate(s.bad)...)
	for _, j := range s.join {
		if _, err := node.ParseContact(j); err != nil {
			errs = append(errs, s.bad("join", err.Error()))
		}
	}
	for _, u := range s.seeds {
		if _, err := canon.Canonical(u); err != nil {
			errs = append(errs, s.bad("seed", err.Error()))
		}
	}
	for i, u := range s.urls {
		if strings.HasPrefix(u, "-") {
			errs = append(errs, fmt.Errorf("flag %s after the URL %s: give the flags first, herod run [flags] URL…", u, s.urls[max(i-1, 0)]))
			break
		}
		if _, err := canon.Canonical(u); err != nil || !strings.Contains(u, "://") {
			errs = append(errs, fmt.Errorf("argument %q is not a URL to crawl: herod run takes flags, then the URLs to seed (like https://example.org/)", u))
		}
	}
	if _, err := s.crawl.config(); err != nil {
		errs = append(errs, s.bad("allow-private", err.Error()))
	}
	return errors.Join(errs...)
}

// hostPort checks "host:port"; ipOnly wants an IP address for host.
func hostPort(s string, ipOnly bool) error {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q", p)
	}
	if ipOnly && net.ParseIP(h) == nil {
		return fmt.Errorf("%q is not an IP address", h)
	}
	return nil
}

func originOK(s string) bool {
	if s == "" {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && (u.Path == "" || u.Path == "/")
}

// nodeConfig is the node.Config of the resolved settings, logging to w.
func (s *runSettings) nodeConfig(w io.Writer) (node.Config, error) {
	cc, err := s.crawl.config()
	if err != nil {
		return node.Config{}, err
	}
	cc.HostNewURLs = s.hostNewURLs
	cc.WriteCopies = s.writeCopies
	return node.Config{
		DataDir: s.data, Listen: s.listen, Announce: s.announce, AddrTimeout: s.addrTimeout, NoRelayService: s.noRelay, Join: s.join,
		PurgeAuthorities: s.purgeAuth, AccessRules: s.accessRules, RebalanceInterval: s.rebalance,
		VirtualServers: s.vnodes, Seeds: s.seeds, Gateway: s.gateway, GatewayOffset: s.offset, DayLength: s.day,
		Replay: s.replay, GatewayOrigin: s.gwOrigin, ReplayOrigin: s.rpOrigin,
		PublicStatus: s.publicStatus, Frameless: s.frameless, ReplayRobots: s.replayRobots, Quota: int64(s.quota), DiskReserve: int64(s.diskReserve),
		GatewayLimits: gateway.Limits{MaxInFlight: s.gwMaxRequests, MemoryBudget: int64(s.gwMemory), ExportRate: exportRate(s.exportRate),
			RequestRate: s.serveRate, RequestBurst: s.serveBurst},
		ReplicationInterval: s.replInterval, Replicas: s.replicas,
		HandOffHold:  s.handOffHold,
		DownloadRate: int64(s.download), UploadRate: int64(s.upload), ReplicationShare: s.replShare,
		Crawl: cc, Browser: s.browser.config(), Logger: newLogger(w, s.logFormat, s.verbose),
	}, nil
}

// newLogger returns a logger on w in format "text" or "json": warnings
// only, or everything with verbose.
func newLogger(w io.Writer, format string, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	opt := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opt))
	}
	return slog.New(slog.NewTextHandler(w, opt))
}

// defaultServeRate is --serve-rate's default: requests per second of one
// remote client, ample for a reader, a pace for a bulk harvester.
const defaultServeRate = 20

// exportRate is gateway.Limits.ExportRate of --export-rate (0: no cap).
func exportRate(b byteRate) int64 {
	if b == 0 {
		return -1
	}
	return int64(b)
}
