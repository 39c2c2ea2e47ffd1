package node

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
)

// newBareHost is a libp2p host that is no ring member: what an outsider
// runs to talk to a node.
func newBareHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestProtocolStreamLimit: one member opening more replication streams
// than protocolLimits allows has the extra ones reset by the resource manager
// before the handler runs.
func TestProtocolStreamLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p hosts in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The streams come from a ring member: a non-member's are reset by
	// the membership gate anyway.
	lr := startStableRing(ctx, t, t.TempDir(), 2, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond, ReplicationInterval: -1})
	defer lr.Close()
	n, h := lr.Nodes[0], lr.Nodes[1].host
	if err := n.host.Network().ResourceManager().ViewProtocol(replicateProtocol, func(s network.ProtocolScope) error {
		if got := s.(rcmgr.ResourceScopeLimiter).Limit().GetStreamLimit(network.DirInbound); got != protocolLimits[replicateProtocol].In {
			t.Errorf("replicate inbound stream limit %d, want %d", got, protocolLimits[replicateProtocol].In)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	in, out := protocolPeerLimits()
	t.Logf("rcmgr default per peer and protocol on this machine: %d inbound, %d outbound streams", in, out)

	limit := protocolLimits[replicateProtocol].In
	extra := 6
	var streams []network.Stream
	refused := 0
	for range limit + extra {
		s, err := h.NewStream(ctx, n.host.ID(), replicateProtocol)
		if err != nil {
			refused++
			continue
		}
		// The length of a request frame: the protocol is negotiated and the
		// handler waits for the rest.
		if _, err := s.Write([]byte{41}); err != nil { // a 41-byte frame follows, never
			refused++
			s.Reset()
			continue
		}
		streams = append(streams, s)
	}
	// Held streams wait for a request the handler never gets whole; reset
	// ones fail at once.
	deadline := time.Now().Add(time.Second)
	for _, s := range streams {
		_ = s.SetReadDeadline(deadline)
		var b [1]byte
		_, err := s.Read(b[:])
		var te interface{ Timeout() bool }
		if err != nil && !(errors.As(err, &te) && te.Timeout()) && !errors.Is(err, os.ErrDeadlineExceeded) {
			refused++
		}
		s.Reset()
	}
	if refused != extra {
		t.Fatalf("%d of %d streams refused, want %d (limit %d)", refused, limit+extra, extra, limit)
	}
}

// protocolPeerLimits returns the streams one peer may hold open on one
// protocol under rcmgr's default limits, scaled to this machine (what
// libp2p.New installs when given no resource manager).
func protocolPeerLimits() (in, out int) {
	l := rcmgr.DefaultLimits.AutoScale().ToPartialLimitConfig().ProtocolPeerDefault
	return int(l.StreamsInbound), int(l.StreamsOutbound)
}
