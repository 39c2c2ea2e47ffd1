package p2phost

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/x/rate"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/node/reach"
)

// New starts a libp2p host listening on the TCP address listen
// ("ip:port") and on QUIC at the same ip and port, authenticated with Noise.
// bwc counts the bytes of every stream by protocol. It dials a member's
// TCP addresses first and its QUIC and relayed ones a quarter second
// later (tcpFirst).
//
// Reachability comes from libp2p's own machinery: a host listening on all
// interfaces or on a private address asks its router for a port mapping
// (UPnP IGD or NAT-PMP, libp2p.NATPortMap); every host runs AutoNAT v2
// (client and server: members tell each other which of their addresses
// are dialable), the circuit relay v2 client and hole punching (DCUtR).
// The relay service a reachable member runs for others starts once the
// node knows its ring address (StartRelayService).
//
// With a fixed port, New first binds it exclusively on TCP and UDP and
// checks after starting that the host listens on both: a port another
// program or another herod holds is a *PortInUseError.
func New(listen string, key crypto.PrivKey, bwc metrics.Reporter, reg prometheus.Registerer) (host.Host, error) {
	ip, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return nil, fmt.Errorf("listen address %q: not an IP address", listen)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("listen address %q: bad port", listen)
	}
	fam := "ip4"
	if parsed.To4() == nil {
		fam = "ip6"
	}
	addrs := []string{fmt.Sprintf("/%s/%s/tcp/%s", fam, ip, port)}
	if port != "0" {
		if err := probePorts(listen); err != nil {
			return nil, err
		}
		// QUIC shares the port number only when it is fixed; with port 0 the
		// two transports would pick different ports and the second address
		// would not be derivable from the first.
		addrs = append(addrs, fmt.Sprintf("/%s/%s/udp/%s/quic-v1", fam, ip, port))
	}
	cm, err := connmgr.NewConnManager(64, 256)
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	rm, err := newResourceManager()
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ResourceManager(rm),
		libp2p.ListenAddrStrings(addrs...),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.ConnectionManager(cm),
		libp2p.EnableRelay(),
		libp2p.EnableHolePunching(),
		libp2p.EnableAutoNATv2(),
		libp2p.PrometheusRegisterer(reg), // libp2p's own metrics, on the node's /metrics
		libp2p.BandwidthReporter(bwc),
		libp2p.SwarmOpts(swarm.WithDialRanker(tcpFirst)),
	}
	if reach.WantsPortMap(listen) {
		opts = append(opts, libp2p.NATPortMap())
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("libp2p host: %w", err)
	}
	if port != "0" {
		if err := checkListening(h, listen); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// Connection rate limits per source address. libp2p's default allows a new
// connection per IPv4 address every 5 s after a burst of 16; the
// volunteers of one household, or of one carrier-grade NAT, share one
// public address, and ring verification dials a fresh connection per
// claimed contact, so a second node behind a router was refused by its
// neighbour ("rate limit exceeded", TestHomeNetworks). herod allows two
// new connections a second per IPv4 address (per /56 for IPv6) after a
// burst of 64; loopback is not limited.
var (
	connRatePerIP  = rate.Limit{RPS: 2, Burst: 64}
	connRatePer48  = rate.Limit{RPS: 5, Burst: 256}
	connRateExempt = []rate.PrefixLimit{
		{Prefix: netip.MustParsePrefix("127.0.0.0/8"), Limit: rate.Limit{}},
		{Prefix: netip.MustParsePrefix("::1/128"), Limit: rate.Limit{}},
	}
)

// newResourceManager returns libp2p's resource manager with its default
// scaled limits and herod's connection rate limits. Its Prometheus
// statistics are off: they go to the process's default registry, which
// no node serves, yet tracing them cost every stream's open and close
// a lock and several label lookups (issue 23: ~3% of a ring's crawl CPU).
func newResourceManager() (network.ResourceManager, error) {
	lim := &rate.Limiter{
		NetworkPrefixLimits: connRateExempt,
		SubnetRateLimiter: rate.SubnetLimiter{
			IPv4SubnetLimits: []rate.SubnetLimit{{PrefixLength: 32, Limit: connRatePerIP}},
			IPv6SubnetLimits: []rate.SubnetLimit{{PrefixLength: 56, Limit: connRatePerIP}, {PrefixLength: 48, Limit: connRatePer48}},
			GracePeriod:      time.Minute,
		},
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(rcmgr.DefaultLimits.AutoScale()), rcmgr.WithConnRateLimiters(lim), rcmgr.WithMetricsDisabled())
	if err != nil {
		return nil, fmt.Errorf("libp2p resource manager: %w", err)
	}
	return rm, nil
}

// StreamLimit is how many streams of one protocol a host may hold open
// at once, all peers together, each way.
type StreamLimit struct{ In, Out int }

// LimitProtocols sets limits on h's resource manager, keeping the memory
// limit each protocol had: a stream over its protocol's limit is reset
// before its handler runs.
func LimitProtocols(h host.Host, limits map[protocol.ID]StreamLimit) error {
	rm := h.Network().ResourceManager()
	for p, l := range limits {
		err := rm.ViewProtocol(p, func(s network.ProtocolScope) error {
			sl, ok := s.(rcmgr.ResourceScopeLimiter)
			if !ok {
				return fmt.Errorf("resource manager %T cannot set limits", rm)
			}
			sl.SetLimit(&rcmgr.BaseLimit{
				StreamsInbound:  l.In,
				StreamsOutbound: l.Out,
				Streams:         l.In + l.Out,
				Memory:          sl.Limit().GetMemoryLimit(),
			})
			return nil
		})
		if err != nil {
			return fmt.Errorf("node: limit protocol %s: %w", p, err)
		}
	}
	return nil
}
