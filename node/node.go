package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/throttle"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/dayclaim"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/node/importer"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/node/member"
	"github.com/herod-archive/herod/node/p2phost"
	"github.com/herod-archive/herod/node/purge"
	"github.com/herod-archive/herod/node/query"
	"github.com/herod-archive/herod/node/reach"
	"github.com/herod-archive/herod/node/render"
	"github.com/herod-archive/herod/node/replication"
	"github.com/herod-archive/herod/node/resolve"
	"github.com/herod-archive/herod/node/ringpage"
	nodesearch "github.com/herod-archive/herod/node/search"
	"github.com/herod-archive/herod/node/witness"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
	"github.com/herod-archive/herod/ring/p2p"
	"github.com/herod-archive/herod/search"
)

// Node is one herod volunteer node: a libp2p host, its virtual servers on
// the ring, the archive it keeps, the crawler that fills it and the gateway
// that serves it.
type Node struct {
	cfg      Config
	log      *slog.Logger
	host     host.Host
	bwc      *metrics.BandwidthCounter
	bw       throttle.Caps        // byte-rate caps
	metrics  *prometheus.Registry // the node's own and its libp2p host's (metrics.go)
	ring     *ring.Ring
	tr       *p2p.Transport
	members  *member.Gate     // the trust boundary (member.go)
	kit      *kit.Kit         // every protocol handler's registration (protocol.go)
	pool     *kit.Pool        // streams of session protocols kept between exchanges (protocol.go)
	identity identity.Signer  // signs versions and purge orders
	purge    *purge.Book      // purge orders (purge.go)
	purgeX   *purge.Exchanger // carries the orders between members (purge.go)
	access   *nodeAccess      // access rules, local and ring-wide (access.go)
	store    *archive.Store
	crawler  *crawl.Crawler
	fwd      *forward.Forwarder
	links    *forward.Links // the links protocol (links.go)
	outbox   *forward.Outbox
	dht      p2p.LateDHT // the ring's Resolver; starts in join
	repl     *replication.Replicator
	query    *query.Service    // ring-wide queries (query.go)
	ringpage *ringpage.Service // the gateway's /ring page (summary.go)
	resolve  *resolve.Service  // any URL, from its holders (resolve.go)
	witness  *witness.Service  // capture dates believed (witness.go)
	gw       *gateway.Server
	httpSrv  *http.Server // the gateway's UI origin
	gwLn     net.Listener
	rpSrv    *http.Server // the gateway's content (replay) origin
	rpLn     net.Listener
	self     ring.Contact
	imp      *importer.Importer // imports WARC, WACZ and ARC files (importing.go)

	ctx     context.Context // lives from Start to Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool
	closed  atomic.Bool

	reach       string              // how the ring reaches this node: ReachListen, ReachMapped or ReachAnnounced
	joinedVia   string              // the ring address of the member this node joined through (joinring.go)
	dataLock    *os.File            // held while the node runs on its data directory (datadir.go)
	lan         io.Closer           // mDNS on the LAN, behind a home router
	addrChanged chan string         // AddressChanged
	rsvp        *client.Reservation // the relay slot of a ReachRelayed node
	relaySvc    io.Closer           // the circuit relay this node runs for others
	counters    struct {
		badFrames atomic.Int64 // inbound requests that did not parse, every protocol
	}
	claims   *claim.Claims      // the day's fetches and claims (claim.go)
	dayclaim *dayclaim.Service  // claim and handover streams
	takeOver *dayclaim.TakeOver // ranges taken over mid-day
	// quietTakeOver, when a test sets it, keeps this node's take-overs
	// unannounced (no re-forward), to measure the ring without them.
	quietTakeOver atomic.Bool
	reloc         *dayclaim.Relocator   // the crawler's forwarder, with the fetch-time ownership check
	size          *forward.SizeEstimate // the ring's size, for the forwarder
	render        *render.Service       // browser capture (render.go)
	renderCache   renderCache           // the members with the role (render.go)

	// Full-text search on the ring (search.go).
	search      *nodesearch.Service
	searchStore *search.Store   // the postings of the terms this node holds
	recent      *recentCaptures // the crawler's new captures, for the indexer (recent.go)
	// replies bounds the record bytes the node's replies to other nodes
	// hold at once, replicate's and the archive protocol's together.
	replies *wire.ReplyBudget
	// stopOwned are the ranges the node owned when Close began (set
	// when stopOwnedSet), for the search mark closeAll writes.
	stopOwned    []archive.KeyRange
	stopOwnedSet bool

	linkIdx *linkIndex // the link index and PageRank (linkindex.go)
}

// New builds a node from cfg without any network I/O: it locks
// cfg.DataDir, opens the archive, the access rules and the purge orders
// there and starts the libp2p host on its listen address. Start finds the
// ring address (which may take a port mapping or a relay reservation),
// builds the ring, the crawler and the gateway on it, and joins. A node
// that was built but not started is closed with Close.
func New(cfg Config) (n *Node, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data dir: %w", err)
	}
	n = &Node{cfg: cfg, log: cfg.Logger, addrChanged: make(chan string, 1),
		replies: wire.NewReplyBudget(wire.DefaultReplyBytes)}
	if n.bw, err = throttle.NewCaps(cfg.DownloadRate, cfg.UploadRate, cfg.ReplicationShare); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	built := n // the returns below set n to nil
	defer func() {
		if err != nil {
			built.closeAll()
		}
	}()
	if n.dataLock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	key, err := identity.LoadKey(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n.bwc = metrics.NewBandwidthCounter()
	n.metrics = prometheus.NewRegistry()
	if n.host, err = p2phost.New(cfg.Listen, key, n.bwc, n.metrics); err != nil {
		return nil, err
	}
	if err := p2phost.LimitProtocols(n.host, protocolLimits); err != nil {
		return nil, err
	}
	n.tr = p2p.New(n.host, cfg.Logger.With("sub", "ring"))
	n.self = ring.Contact{Peer: n.host.ID().String()} // the address comes in Start (attach)
	if n.identity, err = identity.NewSigner(key); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.store, err = archive.Open(filepath.Join(cfg.DataDir, "archive"), archive.Options{
		DayLength:   cfg.DayLength,
		Quota:       cfg.Quota,
		DiskReserve: cfg.DiskReserve,
		MaxBody:     cmp.Or(cfg.Crawl.MaxBody, crawl.DefaultMaxBody), // records from peers: --max-body
		GzipLevel:   cfg.GzipLevel,
		DictSamples: cfg.DictSamples,
		DictWait:    dictWait(cfg),
		NoSync:      cfg.NoSync,
		Signer:      n.identity,
		Verifier:    identity.Verifier{},
		Logger:      n.log.With("sub", "archive"),
	})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := n.checkBrowser(); err != nil { // render.go
		return nil, err
	}
	n.setupMembers() // its Ring is set in Start, before any handler runs
	n.setupKit()
	if err := n.setupAccess(); err != nil { // access.go; before setupPurge
		return nil, err
	}
	if err := n.setupPurge(); err != nil {
		return nil, err
	}
	return n, nil
}

// attach finds the ring address the node's virtual-server ids derive
// from: the announced or listen address, the router's mapping, or, for a
// node nobody can dial, a relay reservation through a member it joins —
// network I/O, bounded by ctx and Config.AddrTimeout. It then runs the
// circuit relay for others unless the node is relayed itself.
func (n *Node) attach(ctx context.Context) error {
	cfg := n.cfg
	addr, how, err := reach.RingAddress(ctx, n.host, cfg.Listen, cfg.Announce, cfg.AddrTimeout)
	var relay string
	if errors.Is(err, reach.ErrNoPublicAddr) && len(cfg.Join) > 0 {
		// Nobody can dial this node: it joins through a relay.
		rctx, cancel := context.WithTimeout(ctx, cfg.AddrTimeout)
		var rerr error
		addr, relay, n.rsvp, rerr = p2phost.RelayedAddress(rctx, n.host, cfg.Listen, cfg.Join, n.tr.Observe)
		cancel()
		if rerr != nil {
			return fmt.Errorf("node: ring address: %w; and %w", err, rerr)
		}
		how, err = ReachRelayed, nil
	}
	if err != nil {
		return fmt.Errorf("node: ring address: %w", err)
	}
	if addr == "" { // port 0: the address the host bound
		if n.self, err = p2p.ContactOf(n.host); err != nil {
			return fmt.Errorf("node: ring address: %w", err)
		}
		how = ReachListen
	} else {
		n.self = ring.Contact{Peer: n.host.ID().String(), Addr: addr, Relay: relay}
	}
	n.reach = how
	n.log = cfg.Logger.With("node", n.self.Addr)
	n.tr.SetSelf(n.self.Addr)
	if how != ReachRelayed && !cfg.NoRelayService {
		if n.relaySvc, err = p2phost.StartRelayService(n.host); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	return nil
}

// buildRing builds the ring at the node's address, and what routes
// through it: the claims, the trust gate's view, the links protocol and
// the forwarder.
func (n *Node) buildRing() error {
	cfg := n.cfg
	saved, err := identity.LoadIndexes(cfg.DataDir, cfg.VirtualServers)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.ring, err = ring.New(ring.Config{
		Self:              n.self,
		VirtualServers:    cfg.VirtualServers,
		Indexes:           saved,
		ChooseIndexes:     !cfg.FixedIndexes,
		StabilizeInterval: cfg.StabilizeInterval,
		Resolver:          &n.dht,
		Took:              n.tookRange,
		Moving:            n.movingVnode,
		Logger:            n.log.With("sub", "ring"),
	}, n.tr)
	if err != nil {
		return fmt.Errorf("node: ring: %w", err)
	}
	n.members.Ring = n.ring
	n.setupClaims()
	if n.outbox, err = forward.OpenOutbox(filepath.Join(cfg.DataDir, "outbox")); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.setupLinks()
	if err := n.setupLinkIndex(); err != nil {
		return err
	}
	n.size = &forward.SizeEstimate{Status: n.ring.Status}
	n.fwd, err = forward.New(forward.Config{
		Ring:       n.ring,
		Deliver:    n.links.Deliver,
		Outbox:     n.outbox,
		Every:      cfg.FlushInterval,
		PerVnode:   cfg.WalkPerVnode,
		RingSize:   n.size.RingSize,
		Replicas:   cfg.LinkReplicas,
		Logger:     n.log.With("sub", "forward"),
		LocalPeer:  n.self.Peer,
		Day:        n.crawlDay,
		Idle:       func() bool { return n.crawler != nil && n.crawler.Queued() == 0 },
		ShareKnown: n.links.ShareKnown,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.links.Forwarder = n.fwd
	return nil
}

// buildCrawl builds the crawler over the ring and the archive, the
// services around it (replication, queries, resolve, witness, the ring
// page) and the gateway.
func (n *Node) buildCrawl() error {
	cfg := n.cfg
	cc := cfg.Crawl
	cc.DayLength = cfg.DayLength
	cc.Owns = n.plansURL
	cc.Logger = n.log.With("sub", "crawl")
	cc.Download = n.bw.Down
	cc.Paused = n.crawlPaused
	n.setupPoliteness(&cc)
	if err := n.setupSearch(); err != nil { // search.go
		return err
	}
	if err := n.setupReplication(); err != nil {
		return err
	}
	if cc.WriteCopies > 1 {
		cc.Copies = n.repl // a fetch is done once WriteCopies copies exist
	}
	n.setupQuery()
	n.setupResolve()
	n.setupWitness()
	n.setupRingPage()
	n.reloc = &dayclaim.Relocator{Forwarder: n.fwd, Ring: n.ring, Claims: n.claims, Self: n.self.Peer,
		Day: n.claimDay, Replicas: cfg.LinkReplicas, Logger: n.log,
		Confirms: n.repl.HoldsURL} // a held hand-off's URL is fetched here, claimed or not
	if err := n.setupRender(); err != nil { // render.go
		return err
	}
	deps := crawl.Deps{
		Forwarder:  n.reloc,
		Sharer:     n.reloc,
		Relocator:  n.reloc,
		Requisites: n.reloc,
		Browser:    n.render,
		Fetched:    n.repl.Confirm, // releases the hand-offs held for the URL
	}.WithStore(n.store)
	if n.recent != nil {
		deps.Archive = keepingStore{n.store, n.recent}
	}
	var err error
	n.crawler, err = crawl.New(filepath.Join(cfg.DataDir, "crawl"), cc, deps)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.links.Crawler = n.crawler
	// Every URL the crawler learns goes to its range's holders within
	// replication.PushDelay (queued until the push loop starts in Start).
	n.crawler.OnKnown(n.repl.NotifyKnown)
	n.repl.OnRecheck(n.crawler.Recheck) // a held hand-off's URL is fetched now
	return n.setupGateway()
}

// Start finds the node's ring address and builds the ring, the crawler
// and the gateway on it (network I/O under ctx: see attach), joins the
// ring (or starts a new one), begins crawling and serving, and hands the
// configured seeds to the ring. It returns once the node has joined; the
// work continues until Close, whatever becomes of ctx.
func (n *Node) Start(ctx context.Context) error {
	if !n.started.CompareAndSwap(false, true) {
		return errors.New("node: already started")
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.attach(ctx); err != nil {
		return err
	}
	if err := n.buildRing(); err != nil {
		return err
	}
	if err := n.buildCrawl(); err != nil {
		return err
	}
	n.kit.MustHandle(n.purgeX.Spec())
	n.kit.MustHandle(n.links.Spec())
	n.kit.MustHandle(rawSpec(archiveProtocol, n.resolve.Handle, resolveRequest, streamTimeout, 128))
	n.kit.MustHandle(n.dayclaim.ClaimSpec())
	n.kit.MustHandle(n.dayclaim.HandoverSpec())
	n.kit.MustHandle(n.ringpage.Spec())
	n.startLinkIndex() // linkindex.go
	n.setupImport()
	if err := n.startLAN(); err != nil {
		return err
	}
	if err := n.ring.Start(n.ctx); err != nil {
		return fmt.Errorf("node start: ring: %w", err)
	}
	if err := n.join(ctx); err != nil {
		return err
	}
	if err := identity.SaveIndexes(n.cfg.DataDir, n.ring.Indexes()); err != nil {
		return fmt.Errorf("node start: %w", err)
	}
	n.serveGateway()
	if err := gateway.WriteGatewayURL(n.cfg.DataDir, n.GatewayURL()); err != nil {
		n.log.Warn("herod seed and status need --node: cannot record the gateway's URL", "err", err)
	}
	n.startRouting()
	if err := n.crawler.Start(n.ctx); err != nil {
		return fmt.Errorf("node start: crawl: %w", err)
	}
	if len(n.cfg.Seeds) > 0 {
		if err := n.Seed(ctx, n.cfg.Seeds); err != nil {
			return fmt.Errorf("node start: %w", err)
		}
	}
	n.startReplication()
	n.startWitness()
	n.goRun(n.rebalanceLoop)
	n.goRun(n.purgeX.SpreadLoop)
	n.startAccess() // access.go
	n.startSearch() // search.go
	n.log.Info("node started", "peer", n.self.Peer, "ring", n.self.Addr, "gateway", n.GatewayURL())
	return nil
}

// goRun runs f(n.ctx) until it returns; Close waits for it.
func (n *Node) goRun(f func(ctx context.Context)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f(n.ctx)
	}()
}

// startLAN, behind a home router, finds the household's other nodes on
// the LAN (see p2phost.StartLAN) and keeps the node's address: its relay
// reservation, or its mapping (watchAddress).
func (n *Node) startLAN() error {
	if n.reach != ReachMapped && n.reach != ReachRelayed {
		return nil
	}
	lan, err := p2phost.StartLAN(n.ctx, n.host)
	if err != nil {
		return fmt.Errorf("node start: mDNS: %w", err)
	}
	n.lan = lan
	n.goRun(func(ctx context.Context) {
		if n.reach == ReachRelayed {
			p2phost.KeepRelayed(ctx, n.host, n.self, n.rsvp, n.tr.Observe, n.log, n.addrChanged)
		} else {
			n.watchAddress(ctx)
		}
	})
	return nil
}

// startRouting starts the loops that move links and ranges: the ring
// page's observer, the forwarder, the re-forwarding of take-overs and the
// take-over watch, subscribed before the crawl starts so that no range
// this node takes over from then on goes unnoticed.
func (n *Node) startRouting() {
	n.goRun(func(ctx context.Context) { n.ringpage.Run(ctx, ringpage.DefaultObserveInterval) })
	n.goRun(n.fwd.Run)
	n.goRun(n.links.RunReforward) // after take-overs (forward.Links.AnnounceTakeOver)
	sub := n.ring.Subscribe(64)
	n.takeOver.Watch(sub)
	n.goRun(func(ctx context.Context) {
		defer sub.Unsubscribe()
		n.takeOver.Run(ctx)
	})
}

// Close leaves the ring gracefully and stops everything. It is safe to call
// more than once.
func (n *Node) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	if n.started.Load() && n.dayclaim != nil { // built: Start got past buildRing
		n.stopOwned, n.stopOwnedSet = n.ownedRanges(), true // search.go: for the stop's mark
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.dayclaim.HandOver(ctx, n.ring.Status().Vnodes)
		if err := n.ring.Leave(ctx); err != nil {
			n.log.Debug("ring leave", "err", err)
		}
		cancel()
	}
	return n.closeAll()
}

func (n *Node) closeAll() error {
	var errs []error
	n.closeGateway()
	if n.cancel != nil {
		n.cancel()
	}
	if n.crawler != nil {
		errs = append(errs, n.crawler.Close())
	}
	n.wg.Wait()
	errs = append(errs, n.closeLinkIndex())
	if n.lan != nil {
		errs = append(errs, n.lan.Close())
	}
	if n.relaySvc != nil {
		errs = append(errs, n.relaySvc.Close())
	}
	if n.ring != nil {
		errs = append(errs, n.ring.Close())
	}
	if n.pool != nil {
		errs = append(errs, n.pool.Close())
	}
	errs = append(errs, n.dht.Close())
	if n.host != nil {
		errs = append(errs, n.host.Close())
	}
	if n.stopOwnedSet {
		n.writeSearchMark(n.stopOwned) // search.go: nothing writes to the archive now
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	if n.outbox != nil {
		errs = append(errs, n.outbox.Close())
	}
	if n.searchStore != nil {
		errs = append(errs, n.searchStore.Close())
	}
	if n.dataLock != nil {
		errs = append(errs, n.dataLock.Close()) // last: the data directory is free once all is closed
	}
	return errors.Join(errs...)
}

// Contact returns the node's ring contact (peer id and address).
func (n *Node) Contact() ring.Contact { return n.self }

// Multiaddr returns the address other nodes pass to --join.
func (n *Node) Multiaddr() string { return p2phost.JoinAddr(n.self) }

// Idle reports whether the node has no crawl work queued or in flight, no
// links waiting for delivery and no range taken over whose URLs are not
// queued yet.
func (n *Node) Idle() bool {
	return n.crawler.Idle() && !n.fwd.Busy() && n.takeOver.Idle() && !n.links.Reforwarding()
}

// NewDay starts a new crawl day now (the crawler also does this on its own
// when the day length elapses).
func (n *Node) NewDay(ctx context.Context) error { return n.crawler.NewDay(ctx) }

// Store returns the node's archive.
func (n *Node) Store() *archive.Store { return n.store }

// Ring returns the node's ring membership.
func (n *Node) Ring() *ring.Ring { return n.ring }

// ParseContact reads a member address as given to --join: a multiaddr with
// a /p2p/ component and an IP and TCP port, or a circuit address
// (p2phost.ParseContact).
func ParseContact(s string) (ring.Contact, error) { return p2phost.ParseContact(s) }
