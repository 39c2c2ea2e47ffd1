package p2phost

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
)

// TestTCPFirstRanks: a member's direct TCP addresses are dialed first, as
// libp2p ranks them among themselves; its QUIC addresses quicAfter past
// the last of them, and relayed ones later still. A member with one kind
// of address alone is ranked as libp2p ranks it.
func TestTCPFirstRanks(t *testing.T) {
	m := func(s string) ma.Multiaddr { return ma.StringCast(s) }
	const relay = "/ip4/5.6.7.8/tcp/4001/p2p/12D3KooWGRUVh9MiTZpBzpjkUXZXaVdScyMUbBfsf9jy8YLFtGwd/p2p-circuit"
	addrs := []ma.Multiaddr{
		m("/ip4/1.2.3.4/udp/4001/quic-v1"), m(relay), m("/ip4/1.2.3.4/tcp/4001"),
		m("/ip6/2001:db8::1/udp/4001/quic-v1"), m("/ip6/2001:db8::1/tcp/4001"),
	}
	delay := map[string]time.Duration{}
	for _, d := range tcpFirst(addrs) {
		delay[d.Addr.String()] = d.Delay
	}
	if len(delay) != len(addrs) {
		t.Fatalf("ranked %d of %d addresses: %v", len(delay), len(addrs), delay)
	}
	tcp4, tcp6 := delay["/ip4/1.2.3.4/tcp/4001"], delay["/ip6/2001:db8::1/tcp/4001"]
	lastTCP := max(tcp4, tcp6)
	if min(tcp4, tcp6) != 0 {
		t.Errorf("the first TCP address is dialed after %v", min(tcp4, tcp6))
	}
	for _, q := range []string{"/ip4/1.2.3.4/udp/4001/quic-v1", "/ip6/2001:db8::1/udp/4001/quic-v1"} {
		if delay[q] < lastTCP+quicAfter {
			t.Errorf("%s dialed after %v, before the TCP addresses (%v) and %v", q, delay[q], lastTCP, quicAfter)
		}
		if delay[relay] <= delay[q] {
			t.Errorf("relayed address dialed after %v, not after %s (%v)", delay[relay], q, delay[q])
		}
	}
	for _, one := range [][]ma.Multiaddr{addrs[:1], addrs[2:3], {addrs[0], addrs[3]}} {
		got, want := tcpFirst(one), swarm.DefaultDialRanker(one)
		if len(got) != len(want) {
			t.Fatalf("%v: %v, want libp2p's %v", one, got, want)
		}
		for i := range got {
			if !got[i].Addr.Equal(want[i].Addr) || got[i].Delay != want[i].Delay {
				t.Errorf("%v: %v, want libp2p's %v", one, got, want)
			}
		}
	}
}

// TestDialsTCPFirst: two hosts on loopback, each listening on TCP and
// QUIC, connect over TCP; a member whose TCP port refuses is reached over
// QUIC.
func TestDialsTCPFirst(t *testing.T) {
	newHost := func() peer.AddrInfo {
		h, err := New("127.0.0.1:"+freePort(t), testKey(t), metrics.NewBandwidthCounter(), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}
	}
	h, err := New("127.0.0.1:"+freePort(t), testKey(t), metrics.NewBandwidthCounter(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transport := func(p peer.ID) string {
		conns := h.Network().ConnsToPeer(p)
		if len(conns) != 1 {
			t.Fatalf("%d connections to %s, want 1", len(conns), p)
		}
		if _, err := conns[0].RemoteMultiaddr().ValueForProtocol(ma.P_TCP); err == nil {
			return "tcp"
		}
		if _, err := conns[0].RemoteMultiaddr().ValueForProtocol(ma.P_QUIC_V1); err == nil {
			return "quic"
		}
		return conns[0].RemoteMultiaddr().String()
	}
	both := newHost()
	if len(both.Addrs) < 2 {
		t.Fatalf("host addresses %v: want TCP and QUIC", both.Addrs)
	}
	if err := h.Connect(ctx, both); err != nil {
		t.Fatal(err)
	}
	if got := transport(both.ID); got != "tcp" {
		t.Errorf("connected over %s, want tcp", got)
	}
	// A member whose TCP address refuses: its QUIC address still answers.
	quicOnly := newHost()
	closed := ma.StringCast("/ip4/127.0.0.1/tcp/" + freePort(t))
	var addrs []ma.Multiaddr
	for _, a := range quicOnly.Addrs {
		if !directTCP(a) {
			addrs = append(addrs, a)
		}
	}
	start := time.Now()
	if err := h.Connect(ctx, peer.AddrInfo{ID: quicOnly.ID, Addrs: append(addrs, closed)}); err != nil {
		t.Fatalf("connect with a refusing TCP address: %v", err)
	}
	if got := transport(quicOnly.ID); got != "quic" {
		t.Errorf("connected over %s, want quic", got)
	}
	t.Logf("reached over QUIC %v after a refusing TCP address", time.Since(start).Round(time.Millisecond))
}
