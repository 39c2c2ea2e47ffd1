package node

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
)

// Defaults for the zero values of Config.
const (
	DefaultListen         = "127.0.0.1:4001"
	DefaultGatewayOffset  = 1000
	DefaultVirtualServers = 4
	DefaultDayLength      = 24 * time.Hour
	DefaultFlushInterval  = 250 * time.Millisecond
	DefaultWalkPerVnode   = 64
	// DefaultReplicationShare is the part of each bandwidth cap that
	// replication streams may use.
	DefaultReplicationShare = 0.5
	// MaxReplicas bounds Config.Replicas.
	MaxReplicas = 16
)

// Config configures one herod node. The zero value of every field but
// DataDir means the documented default.
type Config struct {
	// DataDir holds the node's identity key, archive and crawl queue.
	DataDir string
	// Listen is the address "ip:port" the node listens on (TCP, and QUIC on
	// the same port when the port is fixed). Unless Announce is set, it is
	// also the ring address, from whose IP the virtual-server ids derive;
	// 0.0.0.0 or :: (with a fixed port) listens on every interface and
	// takes the public address a router maps (see Announce). Default
	// DefaultListen; port 0 picks a free one.
	Listen string
	// Announce is the public "ip:port" other members reach this node at
	// when it differs from Listen: a port forwarded by hand on the
	// operator's router. Virtual-server ids derive from its IP. Empty means
	// Listen, or, when Listen is 0.0.0.0 or ::, the public address the
	// node's router maps to it by UPnP IGD or NAT-PMP.
	Announce string
	// AddrTimeout bounds how long a node listening on 0.0.0.0 or :: waits
	// for its router's port mapping. Default DefaultAddrTimeout.
	AddrTimeout time.Duration
	// NoRelayService turns off the circuit relay v2 service this node
	// offers other members (under libp2p's default resource limits).
	NoRelayService bool
	// Join lists members to join the ring through, as multiaddrs with a
	// /p2p/ component ("/ip4/1.2.3.4/tcp/4001/p2p/12D3Koo..."). Empty means
	// the node starts a ring of its own.
	Join []string
	// VirtualServers is how many ring positions this node takes, in
	// proportion to its disk and bandwidth. Default DefaultVirtualServers.
	VirtualServers int
	// FixedIndexes runs virtual-server indexes 0..VirtualServers-1. By
	// default a node joining a ring for the first time picks, among the 64
	// allowed indexes, those whose ids best split the ring's gaps, which
	// keeps its share of the URLs near the mean; the choice is saved in
	// DataDir and kept across restarts.
	FixedIndexes bool
	// StabilizeInterval is the ring maintenance period (ring's default when zero).
	StabilizeInterval time.Duration
	// Seeds are URLs handed to the ring once the node has started.
	Seeds []string
	// Gateway is the gateway's listen address. Empty means the ring's IP
	// with the ring port plus GatewayOffset.
	Gateway string
	// GatewayOffset is added to the ring port to find the gateway port.
	// Default DefaultGatewayOffset.
	GatewayOffset int
	// Replay is the listen address of the gateway's content origin, where
	// archived pages are served apart from the gateway's own pages.
	// Empty means the gateway's IP with the gateway port plus 1 (port 0,
	// a free one, when the gateway's is 0).
	Replay string
	// GatewayOrigin and ReplayOrigin are the origins browsers reach the
	// gateway's two listeners at, "http://host:port", when that is not
	// the address the node listens on (a proxy, a host name). Empty means
	// the host name each request came with and the listener's port.
	GatewayOrigin, ReplayOrigin string
	// PublicStatus serves /api/status, /ring and /metrics to anyone. By
	// default only this machine (and holders of the admin token) may
	// read them.
	PublicStatus bool
	// Frameless replays archived pages without the gateway's frame, the
	// banner inside the page (gateway.Config.Frameless).
	Frameless bool
	// GatewayLimits bound the gateway's requests in flight, memory and
	// exports (gateway.Limits; zero fields mean its defaults). An empty
	// SpoolDir means DataDir/spool.
	GatewayLimits gateway.Limits
	// DayLength is the length of a crawl day: every known URL is fetched
	// again once per day. Default DefaultDayLength.
	DayLength time.Duration
	// Quota bounds the archive's bytes on disk; 0 means unlimited.
	Quota int64
	// DiskReserve is the free space the archive keeps on its file system
	// (archive.Options.DiskReserve): below it the node pauses crawling
	// and replication, keeps serving, and resumes by itself when space
	// returns. Zero means archive.DefaultDiskReserve.
	DiskReserve int64
	// GzipLevel is the gzip level of gzip records (1-9): before the
	// archive's dictionary, and those leaving it; 0 means
	// archive.DefaultGzipLevel. Lower levels cost less CPU and more disk.
	GzipLevel int
	// DictSamples is archive.Options.DictSamples: the records after which
	// the archive trains its zstd dictionary (0: the default, 300;
	// negative: never, records stay gzip).
	DictSamples int
	// NoSync stores versions without syncing files or the index. It is for
	// benchmarks and bulk loads only: a crash may lose versions the node
	// had acknowledged, and their replicas may be all that is left.
	NoSync bool
	// Crawl configures fetching and politeness. The node sets its DayLength,
	// Owns and Logger fields.
	Crawl crawl.Config
	// FlushInterval bounds how long an extracted link waits before a ring
	// walk ships it. Default DefaultFlushInterval.
	FlushInterval time.Duration
	// WalkPerVnode starts a walk as soon as the buffer holds this many
	// links per virtual server in the ring (the thesis's c·N), so that each
	// hop of the walk carries enough links to amortize its overhead.
	// Default DefaultWalkPerVnode.
	WalkPerVnode int
	// LinkReplicas delivers each link to its owner and to the next
	// LinkReplicas-1 real nodes on the ring, which crawl it too (the
	// thesis's replica mode). Default 1: the owner only.
	LinkReplicas int
	// LinkSweep is how often the node reads the new versions of the pages
	// it owns into the ring's link index (node/links, docs/links.md).
	// Default DefaultLinkSweep; negative: only on demand (SweepLinks).
	LinkSweep time.Duration
	// ReplicationInterval is the period of replication rounds, in which
	// the node compares each of its ranges with the replicas that hold it
	// and pulls what it lacks. Default DefaultReplicationInterval; negative
	// disables rounds (pull requests from owners are still served).
	ReplicationInterval time.Duration
	// HandOffHold is how long a record another member hands off waits,
	// held, for this node's own fetch of its URL to confirm its payload
	// before it is dropped (herod run --handoff-hold; docs/trust.md).
	// Default replication.DefaultHoldFor (7 days).
	HandOffHold time.Duration
	// RebalanceInterval is how often the node checks its share of the ring
	// and moves a virtual server for a fairer one (ring.Rebalance).
	// Default DefaultRebalanceInterval; negative disables it.
	RebalanceInterval time.Duration
	// PurgeAuthorities lists the peer ids whose purge orders this node
	// carries out for any peer (herod run --purge-authority): the nodes
	// the ring's operator orders purges from. Without them the node
	// carries out only a peer's retraction of its own captures and its
	// own operator's orders (Node.Purge; package purge).
	PurgeAuthorities []string
	// AccessRules is the node's own access rules file (herod run
	// --access-rules; archive/access), reloaded when it changes; ""
	// means "access-rules" in DataDir. herod access add|remove edits it.
	AccessRules string
	// ReplayRobots hides from readers the captures whose URL the site's
	// current robots.txt disallows for the node's crawler (herod run
	// --replay-robots; gateway.Config.Robots), as the file the crawler
	// obeys says, on every surface of the gateway.
	ReplayRobots bool
	// Replicas is k, the real nodes that hold every version: its owner
	// and the next k-1 distinct real nodes clockwise. It must be the
	// same on every node of a ring (a replica checks a pull request
	// against its own k). Default ReplicationFactor; at most MaxReplicas.
	Replicas int
	// DownloadRate and UploadRate cap the bytes per second this node
	// receives and sends: DownloadRate the crawler's response bodies and
	// the replication files it pulls, UploadRate the replication replies
	// it serves. 0 means no cap.
	DownloadRate, UploadRate int64
	// ReplicationShare is the part (0, 1] of each cap that replication
	// streams may use, so that catching up on copies leaves the rest of
	// the download cap to the crawl. Default DefaultReplicationShare.
	ReplicationShare float64
	// Browser configures browser capture: the role, and the pages to
	// render (render.go; herod run --browser-capture).
	Browser BrowserConfig
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, fmt.Errorf("node config: DataDir is required")
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.AddrTimeout == 0 {
		c.AddrTimeout = DefaultAddrTimeout
	}
	if c.VirtualServers == 0 {
		c.VirtualServers = DefaultVirtualServers
	}
	if c.GatewayOffset == 0 {
		c.GatewayOffset = DefaultGatewayOffset
	}
	if c.DayLength == 0 {
		c.DayLength = DefaultDayLength
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.WalkPerVnode == 0 {
		c.WalkPerVnode = DefaultWalkPerVnode
	}
	if c.LinkReplicas == 0 {
		c.LinkReplicas = 1
	}
	if c.RebalanceInterval == 0 {
		c.RebalanceInterval = DefaultRebalanceInterval
	}
	if c.ReplicationInterval == 0 {
		c.ReplicationInterval = DefaultReplicationInterval
	}
	if c.Replicas == 0 {
		c.Replicas = ReplicationFactor
	}
	if c.Replicas < 1 || c.Replicas > MaxReplicas {
		return c, fmt.Errorf("node config: Replicas %d: want 1 to %d", c.Replicas, MaxReplicas)
	}
	if c.Crawl.WriteCopies > c.Replicas {
		return c, fmt.Errorf("node config: Crawl.WriteCopies %d: want at most Replicas (%d)", c.Crawl.WriteCopies, c.Replicas)
	}
	if c.DownloadRate < 0 || c.UploadRate < 0 {
		return c, fmt.Errorf("node config: bandwidth caps %d/%d bytes/s: want 0 (no cap) or more", c.DownloadRate, c.UploadRate)
	}
	if c.ReplicationShare == 0 {
		c.ReplicationShare = DefaultReplicationShare
	}
	if !(c.ReplicationShare > 0 && c.ReplicationShare <= 1) {
		return c, fmt.Errorf("node config: ReplicationShare %v: want more than 0, at most 1", c.ReplicationShare)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	for _, a := range c.PurgeAuthorities {
		if _, err := peer.Decode(a); err != nil {
			return c, fmt.Errorf("node config: purge authority %q is not a peer id: %w", a, err)
		}
	}
	return c, nil
}

// gatewayAddr returns the gateway listen address for a ring bound to ringAddr.
func (c Config) gatewayAddr(ringAddr string) (string, error) {
	if c.Gateway != "" {
		return c.Gateway, nil
	}
	ip, port, err := net.SplitHostPort(ringAddr)
	if err != nil {
		return "", fmt.Errorf("gateway address: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("gateway address: port %q: %w", port, err)
	}
	if p+c.GatewayOffset > 65535 {
		return "", fmt.Errorf("gateway address: ring port %d + offset %d exceeds 65535", p, c.GatewayOffset)
	}
	return net.JoinHostPort(ip, strconv.Itoa(p+c.GatewayOffset)), nil
}

// replayAddr returns the content origin's listen address for a gateway
// listening on gwAddr.
func (c Config) replayAddr(gwAddr string) (string, error) {
	if c.Replay != "" {
		return c.Replay, nil
	}
	ip, port, err := net.SplitHostPort(gwAddr)
	if err != nil {
		return "", fmt.Errorf("replay address: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("replay address: port %q: %w", port, err)
	}
	if p == 0 {
		return net.JoinHostPort(ip, "0"), nil
	}
	if p+1 > 65535 {
		return "", fmt.Errorf("replay address: gateway port %d + 1 exceeds 65535", p)
	}
	return net.JoinHostPort(ip, strconv.Itoa(p+1)), nil
}
