package render

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Defaults of Config's zero fields.
const (
	DefaultConcurrency = 1
	DefaultCPUShare    = 0.5
	// DefaultQueueWait bounds how long a render waits for a free
	// browser slot and the CPU share before it gives up (busy).
	DefaultQueueWait = 60 * time.Second
	// DefaultMaxBody is the largest body a render stores as it is; a
	// larger one is stored truncated ("length"), as the crawler does.
	DefaultMaxBody = crawl.DefaultMaxBody
	// DefaultWait bounds how long a node waits for a member to render
	// its page: a slot (DefaultQueueWait), the render (capture's 30 s by
	// default), the deliveries.
	DefaultWait = 150 * time.Second
	// MaxTries is how many members with the role a page is offered to.
	MaxTries = 2
	// clockSkew is how far the renderer's clock may lag this node's: a
	// page it rendered for this node is dated at most this much before
	// the request.
	clockSkew = 5 * time.Minute
)

// Store is what the service needs of the node's archive.
type Store interface {
	Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error)
	ReadFile(ctx context.Context, e archive.Entry) ([]byte, error)
	Import(ctx context.Context, name string, data []byte) (archive.Version, bool, error)
	VerifyRecord(data []byte) (*archive.Capture, id.ID, error)
	Versions(ctx context.Context, url string) ([]archive.Version, error)
}

// Capturer renders a page (capture.Capturer).
type Capturer interface {
	Capture(ctx context.Context, pageURL string) (*capture.Result, error)
}

var _ Capturer = (*capture.Capturer)(nil)

// Config is what a Service needs of its node.
type Config struct {
	// Self is this node's peer id.
	Self string
	// Capturer renders pages: set on a node with the role. Nil: the
	// node's pages are rendered by members with the role.
	Capturer Capturer
	// Concurrency bounds the renders at once. Default DefaultConcurrency.
	Concurrency int
	// CPUShare is the part (0, 1] of the machine's CPUs the browsers
	// may use on average (Pacer). Default DefaultCPUShare.
	CPUShare float64
	// QueueWait: DefaultQueueWait when zero.
	QueueWait time.Duration
	// Wait: DefaultWait when zero.
	Wait time.Duration
	// MaxBody: DefaultMaxBody when zero.
	MaxBody int64
	// Chooser decides which pages are rendered. Required.
	Chooser *Chooser
	// Store is the node's archive. Required.
	Store Store
	// Owner looks up the ring member that owns key. Required.
	Owner func(ctx context.Context, key id.ID) (ring.Node, error)
	// Owns reports whether this node owns url now. Required.
	Owns func(url string) bool
	// Renderers lists the ring members with the role, this node
	// excepted. Required.
	Renderers func() []ring.Contact
	// HasRole reports whether a peer serves RenderProtocol. Required.
	HasRole func(peer string) bool
	// Open opens a stream of protocol p to a member. Required.
	Open   func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil discards
}

// Stats counts a service's work since it was made.
type Stats struct {
	Chosen    map[Reason]int64 `json:"chosen"`    // pages chosen for a render, by reason
	Rendered  int64            `json:"rendered"`  // renders this node made
	Delegated int64            `json:"delegated"` // pages a member rendered for this node
	Failed    int64            `json:"failed"`    // pages chosen but stored as fetched
	NoMember  int64            `json:"no_member"` // HTML pages offered while no member had the role
	Records   int64            `json:"records"`   // records this node's renders stored
	Delivered int64            `json:"delivered"` // of those, delivered to another owner
	Undeliv   int64            `json:"undelivered"`
	Received  int64            `json:"received"` // records imported from renderers
	Refused   int64            `json:"refused"`  // records refused from renderers
	CPU       time.Duration    `json:"cpu_ns"`   // browser CPU of this node's renders

	// Shared counts pages offered again with the answer of a render in
	// flight or done within RecentRender, served by it (once.go).
	Shared int64 `json:"shared"`
}

// Service chooses the pages to render, renders them (with the role) or
// has a member with the role render them, and routes the records to
// their owners. It implements crawl.Browser. Safe for concurrent use.
type Service struct {
	cfg   Config
	log   *slog.Logger
	slots chan struct{}
	pacer *Pacer

	mu sync.Mutex
	st Stats

	renders renders // by answer, in flight and done (once.go)
	shared  atomic.Int64

	rendered, delegated, failed, noMember           atomic.Int64
	records, delivered, undelivered, received, refd atomic.Int64
}

var _ crawl.Browser = (*Service)(nil)

// New returns a Service for cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Chooser == nil || cfg.Store == nil || cfg.Owner == nil || cfg.Owns == nil ||
		cfg.Renderers == nil || cfg.HasRole == nil || cfg.Open == nil {
		return nil, errors.New("render: Config needs Chooser, Store, Owner, Owns, Renderers, HasRole and Open")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.CPUShare == 0 {
		cfg.CPUShare = DefaultCPUShare
	}
	if !(cfg.CPUShare > 0 && cfg.CPUShare <= 1) {
		return nil, fmt.Errorf("render: CPU share %v: want more than 0, at most 1", cfg.CPUShare)
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.Concurrency),
		pacer: NewPacer(cfg.CPUShare, runtime.NumCPU(), cfg.Now),
		st:    Stats{Chosen: map[Reason]int64{}}}, nil
}

// Role reports whether this node renders pages itself.
func (s *Service) Role() bool { return s.cfg.Capturer != nil }

// Stats returns the service's counters.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	st := s.st
	st.Chosen = make(map[Reason]int64, len(s.st.Chosen))
	for k, v := range s.st.Chosen {
		st.Chosen[k] = v
	}
	s.mu.Unlock()
	st.Rendered, st.Delegated, st.Failed, st.NoMember = s.rendered.Load(), s.delegated.Load(), s.failed.Load(), s.noMember.Load()
	st.Shared = s.shared.Load()
	st.Records, st.Delivered, st.Undeliv = s.records.Load(), s.delivered.Load(), s.undelivered.Load()
	st.Received, st.Refused = s.received.Load(), s.refd.Load()
	return st
}

// Render renders p when the Chooser picks it and a browser is at hand
// (this node's, or a member's with the role): crawl.Browser. A page
// offered with the answer of a render in flight or done within
// RecentRender is served by that render (once.go).
func (s *Service) Render(ctx context.Context, p crawl.BrowserPage) (crawl.BrowserCapture, bool) {
	var renderers []ring.Contact
	if !s.Role() {
		if renderers = s.cfg.Renderers(); len(renderers) == 0 {
			// Nothing to render with: the page is stored as fetched, no
			// host verdict is started, and the HTML is not even parsed.
			if isHTML(p.Header, p.Body) {
				s.noMember.Add(1)
			}
			return crawl.BrowserCapture{}, false
		}
	}
	if !isHTML(p.Header, p.Body) {
		return crawl.BrowserCapture{}, false // Choose would say so
	}
	a := answer{url: p.URL, status: p.Status, digest: id.Sum(p.Body)}
	for {
		d, ok, wait := s.renders.begin(a, s.cfg.Now())
		if ok {
			if s.holds(ctx, p.URL, d.peer, d.started) {
				s.shared.Add(1)
				return crawl.BrowserCapture{Stored: true, Links: slices.Clone(d.links)}, true
			}
			s.renders.forget(a)
			continue
		}
		if wait == nil {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return crawl.BrowserCapture{}, false
		}
	}
	var done *doneRender
	defer func() { s.renders.end(a, done) }()
	why := s.cfg.Chooser.Choose(p.URL, p.Header, p.Body)
	if why == "" {
		return crawl.BrowserCapture{}, false
	}
	s.mu.Lock()
	s.st.Chosen[why]++
	s.mu.Unlock()
	var rep renderReply
	var err error
	started := s.cfg.Now().Add(-clockSkew)
	by := s.cfg.Self
	if s.Role() {
		rep, err = s.renderHere(ctx, p.URL)
		if err == nil {
			s.rendered.Add(1)
		}
	} else {
		rep, by, err = s.delegate(ctx, p.URL, renderers)
		if err == nil {
			s.delegated.Add(1)
		}
	}
	if why == ReasonFirst {
		if err != nil {
			s.cfg.Chooser.Verdicts.Abandon(hostOf(p.URL))
		} else if need, lerr := s.cfg.Chooser.Learned(p.URL, p.Links, rep.Links, rep.Fetched); lerr != nil {
			s.log.Warn("render: cannot keep a host's verdict", "err", lerr)
		} else {
			s.log.Debug("render: host verdict", "host", hostOf(p.URL), "browser", need)
		}
	}
	if err != nil || !rep.Page {
		s.failed.Add(1)
		s.log.Debug("render: page stored as fetched", "url", p.URL, "err", err, "page", rep.Page)
		return crawl.BrowserCapture{}, false
	}
	done = &doneRender{links: rep.Links, peer: by, started: started, at: s.cfg.Now()}
	return crawl.BrowserCapture{Stored: true, Links: rep.Links}, true
}

// renderHere renders pageURL with this node's browser, within the
// concurrency and CPU share, stores every record and delivers those of
// other owners.
func (s *Service) renderHere(ctx context.Context, pageURL string) (renderReply, error) {
	wctx, cancel := context.WithTimeout(ctx, s.cfg.QueueWait)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
	case <-wctx.Done():
		return renderReply{}, fmt.Errorf("render: busy: no browser slot within %v", s.cfg.QueueWait)
	}
	defer func() { <-s.slots }()
	if err := s.pacer.Acquire(wctx); err != nil {
		return renderReply{}, fmt.Errorf("render: busy: CPU share spent for %v", s.cfg.QueueWait)
	}
	res, err := s.cfg.Capturer.Capture(ctx, pageURL)
	if res != nil {
		s.pacer.Charge(res.Usage.CPU)
		s.mu.Lock()
		s.st.CPU += res.Usage.CPU
		s.mu.Unlock()
	}
	if err != nil {
		return renderReply{}, fmt.Errorf("render %s: %w", pageURL, err)
	}
	return s.route(ctx, pageURL, res), nil
}

// route stores the records of res in this node's archive, signed by it
// and marked as captured in a browser, and delivers each whose URL
// another member owns to that member.
func (s *Service) route(ctx context.Context, pageURL string, res *capture.Result) renderReply {
	rep := renderReply{Links: capLinks(res.Links, maxReplyLinks)}
	for _, c := range res.Capped {
		rep.Capped = append(rep.Capped, string(c))
	}
	page, _ := canon.Canonical(pageURL)
	rep.Fetched = Fetched(res)
	byOwner := map[ring.Contact][]archive.Version{}
	var owners []ring.Contact
	caps := res.ToArchive()
	if len(res.Screenshot) > 0 && page != "" {
		caps = append(caps, archive.ScreenshotCapture(page, s.cfg.Now(), res.Screenshot))
	}
	for _, c := range caps {
		if int64(len(c.Body)) > s.cfg.MaxBody {
			c.Body, c.Truncated = []byte{}, "length"
		}
		v, added, err := s.cfg.Store.Put(ctx, c)
		if err != nil {
			s.log.Debug("render: record not stored", "url", c.URL, "err", err)
			rep.Failed++
			continue
		}
		if !added && v.Peer != s.cfg.Self {
			// The same answer is held already, fetched by another member
			// (this node holds it as a replica): its owner holds it too,
			// and this node may deliver only what it signed.
			rep.Held++
			continue
		}
		rep.Records++
		s.records.Add(1)
		if s.cfg.Owns(c.URL) {
			rep.Delivered++
			rep.Page = rep.Page || c.URL == page
			continue
		}
		o, err := s.cfg.Owner(ctx, v.Key)
		if err != nil {
			rep.Failed++
			s.undelivered.Add(1)
			continue
		}
		if _, ok := byOwner[o.Contact]; !ok {
			owners = append(owners, o.Contact)
		}
		byOwner[o.Contact] = append(byOwner[o.Contact], v)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stored, err := s.DeliverTo(ctx, o, byOwner[o])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.log.Debug("render: delivery failed", "owner", o.Addr, "err", err)
			}
			rep.Delivered += len(stored)
			rep.Failed += len(byOwner[o]) - len(stored)
			s.delivered.Add(int64(len(stored)))
			s.undelivered.Add(int64(len(byOwner[o]) - len(stored)))
			for _, v := range byOwner[o] {
				if v.URL == page && slices.Contains(stored, v.Entry().Name()) {
					rep.Page = true
				}
			}
		}()
	}
	wg.Wait()
	return rep
}

// delegate has a member with the role render pageURL: the members are
// tried in an order that depends on the URL (so that pages spread over
// them), at most MaxTries. The page's document must then be in this
// node's archive, signed by the member that rendered it (peer).
func (s *Service) delegate(ctx context.Context, pageURL string, renderers []ring.Contact) (renderReply, string, error) {
	slices.SortFunc(renderers, func(a, b ring.Contact) int {
		return cmp.Compare(rendezvous(pageURL, a.Peer), rendezvous(pageURL, b.Peer))
	})
	var errs []error
	for i, c := range renderers {
		if i == MaxTries {
			break
		}
		started := s.cfg.Now().Add(-clockSkew)
		rep, err := s.ask(ctx, c, pageURL)
		if err == nil && rep.Err != "" {
			err = errors.New(rep.Err)
		}
		if err == nil && rep.Page && !s.holds(ctx, pageURL, c.Peer, started) {
			err = errors.New("its page is not in this node's archive")
		}
		if err == nil {
			return rep, c.Peer, nil
		}
		errs = append(errs, fmt.Errorf("render by %s: %w", c.Addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return renderReply{}, "", errors.Join(errs...)
}

// holds reports whether the archive has a version of pageURL signed by
// peer since started.
func (s *Service) holds(ctx context.Context, pageURL, peer string, started time.Time) bool {
	vs, err := s.cfg.Store.Versions(ctx, pageURL)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(vs, func(v archive.Version) bool { return v.Peer == peer && !v.Time.Before(started) })
}

// rendezvous orders members for a URL.
func rendezvous(u, peer string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(u))
	h.Write([]byte{0})
	h.Write([]byte(peer))
	return h.Sum64()
}

// capLinks keeps at most n links of at most maxLinkLen bytes.
func capLinks(links []string, n int) []string {
	var out []string
	for _, l := range links {
		if len(out) == n {
			break
		}
		if len(l) <= maxLinkLen {
			out = append(out, l)
		}
	}
	return out
}

// Fetched returns the URLs of the GET requests a page's scripts made
// (fetch and XHR) that were answered, at most maxFetched.
func Fetched(res *capture.Result) []string {
	var out []string
	for _, x := range res.Exchanges {
		if len(out) == maxFetched {
			break
		}
		if (x.Type == "Fetch" || x.Type == "XHR") && x.Method == "GET" && x.Status != 0 && len(x.URL) <= maxLinkLen {
			out = append(out, x.URL)
		}
	}
	return out
}
