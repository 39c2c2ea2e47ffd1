package p2phost

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/prometheus/client_golang/prometheus"
)

func testKey(t *testing.T) crypto.PrivKey {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNewRefusesBadListen(t *testing.T) {
	for _, l := range []string{"", "127.0.0.1", "localhost:4001", "127.0.0.1:x"} {
		if h, err := New(l, testKey(t), metrics.NewBandwidthCounter(), prometheus.NewRegistry()); err == nil {
			h.Close()
			t.Errorf("listen %q accepted", l)
		}
	}
}

// TestHostLimitsAndRelay: a host on loopback takes per-protocol stream
// limits, keeping each protocol's memory limit, and runs a relay service.
func TestHostLimitsAndRelay(t *testing.T) {
	h, err := New("127.0.0.1:0", testKey(t), metrics.NewBandwidthCounter(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const p = protocol.ID("/herod/test/1.0.0")
	rm := h.Network().ResourceManager()
	var mem int64
	_ = rm.ViewProtocol(p, func(s network.ProtocolScope) error {
		mem = s.(rcmgr.ResourceScopeLimiter).Limit().GetMemoryLimit()
		return nil
	})
	if err := LimitProtocols(h, map[protocol.ID]StreamLimit{p: {In: 7, Out: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := rm.ViewProtocol(p, func(s network.ProtocolScope) error {
		l := s.(rcmgr.ResourceScopeLimiter).Limit()
		if in, out, all := l.GetStreamLimit(network.DirInbound), l.GetStreamLimit(network.DirOutbound), l.GetStreamTotalLimit(); in != 7 || out != 9 || all != 16 {
			t.Errorf("stream limits %d in, %d out, %d in all; want 7, 9, 16", in, out, all)
		}
		if got := l.GetMemoryLimit(); got != mem {
			t.Errorf("memory limit %d, want %d as before", got, mem)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r, err := StartRelayService(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
