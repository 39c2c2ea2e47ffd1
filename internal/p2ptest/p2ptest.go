package p2ptest

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/herod-archive/herod/ring"
)

// Hosts returns n hosts of one mock network, all linked (not yet
// connected: a stream connects on demand), closed when the test ends.
func Hosts(t testing.TB, n int) []host.Host {
	t.Helper()
	mn := mocknet.New()
	t.Cleanup(func() { mn.Close() })
	hs := make([]host.Host, n)
	for i := range hs {
		h, err := mn.GenPeer()
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	return hs
}

// Opener returns what the node's protocol packages call Open: a stream
// of protocol p from h to the peer of contact c (its address is unused).
func Opener(h host.Host) func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error) {
	return func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error) {
		pid, err := peer.Decode(c.Peer)
		if err != nil {
			return nil, err
		}
		return h.NewStream(ctx, pid, p)
	}
}
