package capture

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/chromedp/cdproto/network"
)

// Config says how pages are rendered. Zero values mean the documented
// defaults, except ExecPath, which is required.
type Config struct {
	// ExecPath is the Chromium (or Chrome) executable.
	ExecPath string
	// NoSandbox runs Chromium without its sandbox (--no-sandbox), which
	// it needs when run as root or where user namespaces are off.
	NoSandbox bool
	// AllowPrivate lists the special-purpose address ranges the browser
	// may reach all the same (tests, a private deployment), as
	// crawl.Config.AllowPrivate does for the crawler.
	AllowPrivate []netip.Prefix
	// Resolver resolves host names, for the address check of the
	// interception and for the proxy's connections (the browser resolves
	// none itself). Default net.DefaultResolver.
	Resolver *net.Resolver
	// TempDir is where the per-page profile directory is made (and
	// removed). Default: os.TempDir().
	TempDir string
	// Timeout bounds a page, from start of the browser to screenshot.
	// Default 30 s.
	Timeout time.Duration
	// Quiet is how long no request must be in flight for the network to
	// count as settled. Default 500 ms.
	Quiet time.Duration
	// StepQuiet is Quiet between two scroll steps. Default 150 ms.
	StepQuiet time.Duration
	// Stall is how long a request may stay in flight before the network
	// counts as settled without it. Default 3 s.
	Stall time.Duration
	// MaxScrolls caps the scroll steps of a viewport height. Default 40.
	MaxScrolls int
	// MaxRequests caps the requests of a page. Default 500.
	MaxRequests int
	// MaxBytes caps the bytes of response bodies of a page. Default 64 MiB.
	MaxBytes int64
	// MaxMemory caps the proportional set size (PSS) of the browser's
	// process tree, sampled every 200 ms: past it the page is stopped
	// (CapMemory) with what was recorded. V8's heap is held to it as well
	// (--max-old-space-size). Default 1 GiB.
	MaxMemory int64
	// MaxLinks caps the links returned. Default 2000.
	MaxLinks int
	// Width and Height are the viewport's, in CSS pixels. Default 1280×800.
	Width, Height int
	// Logger receives debug messages. Default: discarded.
	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if c.ExecPath == "" {
		return errors.New("capture: no browser executable (Config.ExecPath)")
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = 1 << 30
	}
	if c.Quiet <= 0 {
		c.Quiet = 500 * time.Millisecond
	}
	if c.StepQuiet <= 0 {
		c.StepQuiet = 150 * time.Millisecond
	}
	if c.Stall <= 0 {
		c.Stall = 3 * time.Second
	}
	if c.MaxScrolls <= 0 {
		c.MaxScrolls = 40
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = 500
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 64 << 20
	}
	if c.MaxLinks <= 0 {
		c.MaxLinks = 2000
	}
	if c.Width <= 0 {
		c.Width = 1280
	}
	if c.Height <= 0 {
		c.Height = 800
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Exchange is one request the page made and the response it got.
type Exchange struct {
	URL           string
	Method        string
	RequestHeader http.Header
	Status        int         // 0 when no response came (Err says why)
	Header        http.Header // response headers as the browser saw them
	Body          []byte      // payload after content decoding; nil for a redirect
	// Truncated is "length" when the body was not recorded because the
	// page's byte cap was reached.
	Truncated string
	Time      time.Time // when the request was sent
	Received  time.Time // when the response's headers came
	Type      string    // what the browser loaded it as: Document, Image, Fetch…
	Err       string    // why the request failed, when it did
	// SentHeader holds the request's header fields as the browser sent
	// them (Network.requestWillBeSentExtraInfo: Cookie, Accept-Encoding
	// and the like included, an HTTP/2 request's pseudo-header fields
	// too); nil when the browser reported none for the request (a cached
	// answer) or it could not be told which of a redirect's hops they
	// belong to.
	SentHeader http.Header

	id network.RequestID // the browser's, shared by a redirect's hops
}

// Cap names a cap a page reached.
type Cap string

// The caps of Result.Capped.
const (
	CapTime     Cap = "time"
	CapRequests Cap = "requests"
	CapBytes    Cap = "bytes"
	CapScrolls  Cap = "scrolls"
	CapMemory   Cap = "memory"
)

// Result is what rendering a page gave.
type Result struct {
	URL string // the page asked for
	// Exchanges are the requests made, in the order they were sent; a
	// redirect's hops are one each.
	Exchanges []Exchange
	// Links are the absolute http(s) URLs of the rendered page's anchors
	// and of the history routes its scripts pushed or replaced, sorted,
	// without duplicates.
	Links []string
	// Routes are the history routes alone.
	Routes []string
	// Screenshot is a PNG of the viewport at the top of the page (nil
	// when the time cap came first).
	Screenshot []byte
	// Refused are the URLs the interception refused by the address
	// rules or the scheme rule.
	Refused []string
	// RefusedConns are the host:port pairs the proxy refused to connect
	// to (requests the interception does not see, such as WebSockets and
	// preconnects, or a name whose address changed after the check).
	RefusedConns []string
	// Downloads counts downloads the page started (all denied).
	Downloads int
	// Capped lists the caps the page reached.
	Capped []Cap
	// Scrolls is the number of scroll steps made.
	Scrolls int
	Usage   Usage
}

// Usage is what rendering a page cost.
type Usage struct {
	Wall time.Duration // from start of the browser to its end
	// CPU is the user and system time of the browser's processes, as
	// last seen alive (Linux; 0 elsewhere).
	CPU time.Duration
	// PeakMemory is the largest proportional set size (PSS) the
	// browser's processes held together when sampled (after load and
	// after each scroll step; Linux; 0 elsewhere).
	PeakMemory int64
}
