package p2phost

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

// quicAfter is how much later than its TCP addresses a member's other
// addresses (QUIC, relays) are dialed: libp2p's delay for a second
// address family on the public internet (RFC 8305's estimate of a
// round trip). A TCP connection that is up stops them.
const quicAfter = swarm.PublicTCPDelay

// tcpFirst is the host's dial ranker: a member's direct TCP addresses
// first, ranked among themselves as libp2p ranks them
// (swarm.DefaultDialRanker), then, quicAfter past the last of them, its
// other addresses (QUIC, relayed), ranked likewise. libp2p's own ranker
// prefers QUIC; herod prefers TCP because its members exchange many
// small messages over long-lived connections, and a message costs less
// CPU over TCP, Noise and yamux than over QUIC in quic-go
// (BenchmarkSessionExchange, BenchmarkPushRoundTrips; a ring's crawl,
// docs/replicate-cost.md). A member whose TCP port cannot be reached is
// still reached over QUIC, quicAfter later. Hole punching is not
// ranked: libp2p dials every address of a simultaneous connect at once.
func tcpFirst(addrs []ma.Multiaddr) []network.AddrDelay {
	var tcp, other []ma.Multiaddr
	for _, a := range addrs {
		if directTCP(a) {
			tcp = append(tcp, a)
		} else {
			other = append(other, a)
		}
	}
	if len(tcp) == 0 || len(other) == 0 {
		return swarm.DefaultDialRanker(addrs)
	}
	ranked := swarm.DefaultDialRanker(tcp)
	var last time.Duration
	for _, d := range ranked {
		last = max(last, d.Delay)
	}
	for _, d := range swarm.DefaultDialRanker(other) {
		d.Delay += last + quicAfter
		ranked = append(ranked, d)
	}
	return ranked
}

// directTCP reports whether a is a plain TCP address: not relayed, not a
// websocket.
func directTCP(a ma.Multiaddr) bool {
	var tcp, other bool
	ma.ForEach(a, func(c ma.Component) bool {
		switch c.Protocol().Code {
		case ma.P_TCP:
			tcp = true
		case ma.P_CIRCUIT, ma.P_WS, ma.P_WSS, ma.P_TLS, ma.P_HTTP, ma.P_HTTPS:
			other = true
		}
		return true
	})
	return tcp && !other
}
