package crawl

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/throttle"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultUserAgent      = "herod/0.1 (+https://github.com/herod-archive/herod)"
	DefaultConcurrency    = 8
	DefaultHostRate       = 1.0
	DefaultHostConns      = 1
	DefaultMaxActiveHosts = 1024
	DefaultTimeout        = 30 * time.Second
	DefaultDaySwitchWait  = time.Second
	DefaultMaxBody        = 10 << 20
	DefaultDayLength      = 24 * time.Hour
	DefaultMaxURLLen      = 1024
	DefaultMaxRepeat      = 3
	DefaultMaxDepth       = 32
	DefaultRobotsTTL      = 24 * time.Hour
	DefaultPageRequisites = 64
	DefaultHostRequisites = 5000
	DefaultMaxRedirects   = 20
	DefaultHostNewURLs    = 10_000
	// RobotsMaxBytes is how much of a robots.txt file is parsed (RFC 9309
	// asks for at least 500 KiB); the rest is ignored.
	RobotsMaxBytes = 500 << 10
)

// Config configures a Crawler. The zero value of every field means the
// documented default.
type Config struct {
	// UserAgent is sent with every request, robots.txt included. Default
	// DefaultUserAgent; volunteers set a product token and a contact URL.
	// The product token (text before the first '/') selects the robots.txt
	// group.
	UserAgent string
	// From is sent as the From header when non-empty.
	From string
	// Concurrency caps concurrent requests of this node to origin
	// servers, robots.txt included. Default 8. Besides the connections of
	// those requests, at most KeepAlive more stay open between requests
	// (see KeepAlive). Fetched pages are stored and their links forwarded
	// after the connection is released, up to 64*Concurrency pages holding
	// at most 4*MaxBody bytes of bodies at a time.
	Concurrency int
	// HostConns caps concurrent fetches to one host from this node. Default 1.
	HostConns int
	// KeepAlive caps the connections kept open between requests, each
	// for its host's next fetch (at most HostConns a host); past it the
	// least recently used is closed. Default 64*Concurrency: a node
	// crawls hundreds of hosts at once, taking turns, and a bound below
	// their number makes most fetches open a connection again (14% of
	// the CPU of a day of revisits at 100 K URLs, docs/scale.md). Set it to
	// Concurrency where open connections are scarce. Used only by the
	// crawler's own client (Client nil).
	KeepAlive int
	// MaxActiveHosts caps the hosts crawled at once (one loop each, holding
	// up to 32 queued URLs in memory); further hosts with pending URLs wait
	// their turn, and a host yields its turn after every 32 URLs when
	// others wait. Default 1024.
	MaxActiveHosts int
	// HostRate is requests per second per host from this node; a robots.txt
	// Crawl-delay lowers it further. Default 1. It also caps a Budget that
	// is set (CapBudget): whatever a ring-wide budget grants, this node
	// sends a host no more than HostRate requests per second.
	HostRate float64
	// Timeout bounds one request, body included. Default 30s.
	Timeout time.Duration
	// DaySwitchWait bounds how long a new day waits, before it begins,
	// for the old day's requests already on their way to be answered
	// (their heads); no request goes out meanwhile. A request still
	// unanswered by then belongs to the old day and reaches its site after
	// the new day began. Default 1s: host loops wait at most that long
	// for a rollover (docs/crawl.md).
	DaySwitchWait time.Duration
	// MaxBody is the largest body stored, in bytes. A larger body is
	// refused: nothing is stored and the error kind "too_large" is
	// counted, because a truncated capture would be a false record of the
	// page. Default 10 MiB.
	MaxBody int64
	// DayLength is the crawl cycle: day number = now.Unix() / DayLength
	// in seconds. Default 24h; shorter than 1s counts as 1s. The archive
	// must use the same day length.
	DayLength time.Duration
	// AllowDynamic admits URLs with a query string or a cgi-bin path
	// segment. Default false, as in the thesis. Page requisites (what a
	// page embeds: stylesheets, scripts, images, fonts, frames; see
	// ExtractRequisites) are admitted with their query strings either
	// way, within PageRequisites and HostRequisites.
	AllowDynamic bool
	// PageRequisites caps the dynamic requisites (with a query string or
	// a cgi-bin segment) one page hands on while AllowDynamic is off;
	// further ones are counted as KindRequisites and dropped, so that a
	// page listing endless cache-busted images stays a bounded cost.
	// Default 64; negative: none (requisites with a query are out of
	// scope like other dynamic URLs).
	PageRequisites int
	// HostRequisites caps the dynamic requisites this node accepts per
	// host per day (counted by AddRequisites, in memory: a restart
	// starts the count afresh) while AllowDynamic is off; further ones
	// are counted as KindRequisites and dropped. Default 5000; negative:
	// none.
	HostRequisites int
	// MaxRedirects caps a redirect chain: a redirect's target is followed
	// (forwarded to its owner, which queues it) only while fewer than
	// MaxRedirects redirects led to it, however many URLs and nodes the
	// chain crosses (the depth travels with the target: RedirectSender).
	// The redirect answers themselves are stored. Further targets are
	// counted as KindRedirectChain. Default 20 (what browsers and wget
	// follow); at most 255.
	MaxRedirects int
	// HostNewURLs caps the URLs never known before that this node queues
	// per host per day (counted by the queue, in memory: a restart starts
	// the count afresh); further ones are counted as KindHostNewURLs and
	// deferred to the next days, at most 10 caps of them per host (then
	// dropped: see deferred.go). URLs already known are queued every day
	// whatever the count. Default 10,000; negative: none.
	HostNewURLs int
	// Redirects delivers redirect targets with their depth to their
	// owners (see RedirectSender). Nil: targets go to the Forwarder like
	// links, their depth is lost, and only a chain's first MaxRedirects
	// hops from one fetched entry are bounded: a node sets it.
	Redirects RedirectSender
	// MaxURLLen caps the canonical URL length in bytes. Default 1024.
	MaxURLLen int
	// MaxRepeat caps how often one path segment may occur in a URL path
	// (a crawler trap such as /a/b/a/b/a/b/...). Default 3.
	MaxRepeat int
	// MaxDepth caps the number of path segments. Default 32.
	MaxDepth int
	// AllowHosts, when non-empty, admits only these hosts and their
	// subdomains ("example.org" admits "www.example.org"). A port in an
	// entry must match exactly ("127.0.0.1:8080").
	AllowHosts []string
	// DenyHosts excludes these hosts and their subdomains; it wins over
	// AllowHosts.
	DenyHosts []string
	// ContentTypes, when non-empty, is an allow list of media types
	// ("type/subtype", "type/*" or "*/*"): responses of other types are
	// counted (KindContentType) and not stored. Default empty: every type
	// is stored, up to MaxBody (HTML, CSS, scripts, images, fonts, PDF,
	// plain text, XML and RSS, JSON, media…), as archives keep what a
	// page needs and links to.
	ContentTypes []string
	// DenyTypes lists media types (same forms as ContentTypes) that are
	// never stored, whatever ContentTypes says; it wins. Default empty.
	DenyTypes []string
	// KeepNoArchive archives the answers that ask archives not to keep
	// them (X-Robots-Tag or a robots meta tag with noarchive). Default
	// false: such an answer is not archived, only its crawl state is
	// kept and its links followed (noarchive.go; KindNoArchive).
	KeepNoArchive bool
	// Owns reports whether this node owns url. At a new day only owned
	// known URLs are queued again. Nil means every URL.
	Owns func(url string) bool
	// Robots supplies robots.txt files. Nil means this crawler fetches them
	// itself (see HTTPRobots). The node can instead ask the ring node that
	// owns the robots.txt URL, so the ring fetches each file once a day.
	Robots RobotsSource
	// RobotsTTL is how long a fetched robots.txt is trusted. Default 24h;
	// a failed fetch (5xx, unreachable) is retried after RobotsTTL/24.
	RobotsTTL time.Duration
	// Budget paces requests per host. Nil means a LocalBudget at HostRate.
	// The node can plug in a ring-wide budget (see SharedBudget); the
	// crawler waits for it and then for its own LocalBudget at HostRate
	// (CapBudget).
	Budget HostBudget
	// Client, if set, does every fetch (pages and robots.txt), through a
	// copy whose connections are checked against AllowPrivate as the
	// crawler's own are (see guard.guardClient). A supplied
	// client should not follow redirects: the crawler stores a redirect as
	// a version and forwards its target as a link. Nil: a net/http client
	// of the crawler's own (NewClient: HTTP/1.1 or HTTP/2, proxies from the
	// environment, at most HostConns connections per host and KeepAlive
	// kept alive between requests, counted in Stats.Connections).
	Client *http.Client
	// AllowPrivate lists the special-purpose address ranges (see
	// IsInternal: loopback, RFC 1918 and fc00::/7, link-local, CGNAT,
	// multicast, unspecified, reserved) the crawler may connect to, for an
	// archive of a LAN and for tests on loopback. Default none: every
	// connection, robots.txt and redirects included, to such an address
	// after DNS resolution is refused and counted as KindInternal.
	AllowPrivate []netip.Prefix
	// TLS configures https on the default client's connections (its
	// RootCAs, say); nil means the system's defaults. A Client brings its
	// own.
	TLS *tls.Config
	// Clock tells the time. Default time.Now.
	Clock func() time.Time
	// Download caps the bytes per second of the response bodies this
	// crawler reads, shared by all its fetches. Nil: no cap.
	Download *throttle.Limiter
	// Paused, if set, is asked before each fetch: a reason ("disk full")
	// pauses the crawl, asked again every second, until it reports ""
	// (pause.go). Stats.Paused shows the reason.
	Paused func() string
	// WriteCopies is w, the copies of a new version that must exist
	// before its fetch counts as done: this node's and, above 1, w-1
	// replicas' confirmed through Copies (copies.go). Default 1: done
	// once stored here.
	WriteCopies int
	// Copies tells when a stored version's copies exist; WriteCopies
	// above 1 needs it (without it the crawler does not wait).
	Copies CopyWaiter
	// WriteCopiesWait bounds the wait for WriteCopies copies; past it the
	// fetch counts as done and the shortfall as KindWriteCopies. Default
	// DefaultWriteCopiesWait.
	WriteCopiesWait time.Duration
	// Logger receives the crawler's logs. Nil discards them.
	Logger *slog.Logger
}

// withDefaults returns cfg with zero fields replaced by their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.HostConns <= 0 {
		cfg.HostConns = DefaultHostConns
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 64 * cfg.Concurrency
	}
	if cfg.MaxActiveHosts <= 0 {
		cfg.MaxActiveHosts = DefaultMaxActiveHosts
	}
	if cfg.HostRate <= 0 {
		cfg.HostRate = DefaultHostRate
	}
	if cfg.WriteCopiesWait <= 0 {
		cfg.WriteCopiesWait = DefaultWriteCopiesWait
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.DaySwitchWait <= 0 {
		cfg.DaySwitchWait = DefaultDaySwitchWait
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.DayLength <= 0 {
		cfg.DayLength = DefaultDayLength
	}
	cfg.DayLength = max(cfg.DayLength.Truncate(time.Second), time.Second)
	if cfg.MaxURLLen <= 0 {
		cfg.MaxURLLen = DefaultMaxURLLen
	}
	if cfg.MaxRepeat <= 0 {
		cfg.MaxRepeat = DefaultMaxRepeat
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.PageRequisites == 0 {
		cfg.PageRequisites = DefaultPageRequisites
	}
	if cfg.HostRequisites == 0 {
		cfg.HostRequisites = DefaultHostRequisites
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	cfg.MaxRedirects = min(cfg.MaxRedirects, maxRedirectDepth)
	if cfg.HostNewURLs == 0 {
		cfg.HostNewURLs = DefaultHostNewURLs
	}
	if cfg.RobotsTTL <= 0 {
		cfg.RobotsTTL = DefaultRobotsTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Budget = CapBudget(cfg.Budget, cfg.HostRate, cfg.Clock)
	return cfg
}

// NewClient returns the default fetch client: at most conns connections
// kept alive between requests and per host, header and dial timeouts, no
// cookie jar, no redirect following, and no connection to a
// special-purpose address (IsInternal) outside allow, checked on the
// resolved address of every connection.
func NewClient(conns int, timeout time.Duration, allow ...netip.Prefix) *http.Client {
	return newClient(conns, conns, timeout, newGuard(allow), nil)
}

// clientWith returns the client of a crawler with guard g: cfg.Client
// guarded (guard.guardClient), or a new default client whose open
// connections are counted in open.
func (cfg Config) clientWith(g *guard, open *atomic.Int64) *http.Client {
	if cfg.Client != nil {
		return g.guardClient(cfg.Client)
	}
	c := newClient(cfg.KeepAlive, cfg.HostConns, cfg.Timeout, g, open)
	if cfg.TLS != nil {
		c.Transport.(*http.Transport).TLSClientConfig = cfg.TLS.Clone()
	}
	return c
}

// newClient returns a client keeping at most idle connections alive
// between requests, with at most perHost per host, counting its open
// connections in open when it is not nil.
func newClient(idle, perHost int, timeout time.Duration, g *guard, open *atomic.Int64) *http.Client {
	if idle <= 0 {
		idle = DefaultConcurrency
	}
	if perHost <= 0 {
		perHost = idle
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dial := g.dialContext
	if open != nil {
		dial = countConns(dial, open)
	}
	tr := &http.Transport{
		Proxy:                  g.proxy(http.ProxyFromEnvironment),
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           idle,
		MaxIdleConnsPerHost:    perHost,
		MaxConnsPerHost:        perHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// productToken returns the robots.txt product token of a User-Agent:
// the text before the first '/' or space, lower-cased.
func productToken(ua string) string {
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		ua = ua[:i]
	}
	return strings.ToLower(ua)
}

// countConns wraps dial so that every connection it opens counts in open
// until it is closed.
func countConns(dial func(ctx context.Context, network, addr string) (net.Conn, error), open *atomic.Int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		open.Add(1)
		return &countedConn{Conn: nc, open: open}, nil
	}
}

// countedConn is a connection counted in open until its first Close.
type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}
