package p2p_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// relayHost is a host with the relay client, on a loopback IP of its own.
func relayHost(t *testing.T) host.Host {
	t.Helper()
	ip := fmt.Sprintf("127.0.0.%d", 20+hosts.Add(1)%200)
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/"+ip+"/tcp/0"), libp2p.EnableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestRelayedContact: a node reached only through a relay is called
// through it, verified by the IP its own connection comes from (here the
// verifier has no public address, so the relay is asked), and a relayed
// claim of another IP is refused.
func TestRelayedContact(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, x, v := relayHost(t), relayHost(t), relayHost(t)
	res := relayv2.DefaultResources()
	res.Limit = nil
	svc, err := relayv2.New(r, relayv2.WithResources(res))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	rc, _ := p2p.ContactOf(r)
	xc, _ := p2p.ContactOf(x)
	p2p.New(r, nil) // the relay answers ObserveProtocol
	trX, trV := p2p.New(x, nil), p2p.New(v, nil)

	// x learns its IP from the relay and reserves a slot there.
	ip, err := trX.Observe(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	if want := xc.Addr[:len(ip.String())]; ip.String() != want {
		t.Fatalf("observed %s, x is at %s", ip, xc.Addr)
	}
	if _, err := client.Reserve(ctx, x, peer.AddrInfo{ID: r.ID(), Addrs: r.Addrs()}); err != nil {
		t.Fatal(err)
	}
	relay := r.Addrs()[0].String() + "/p2p/" + r.ID().String()
	relayed := ring.Contact{Peer: x.ID().String(), Addr: ip.String() + ":4001", Relay: relay}
	trX.Handle(func(ctx context.Context, from string, m *ring.Message) *ring.Message {
		return &ring.Message{Op: m.Op}
	})
	if _, err := trV.Call(ctx, relayed, &ring.Message{Op: ring.OpPing}); err != nil {
		t.Fatalf("call through the relay: %v", err)
	}
	if calls, rel := trV.CallStats(); calls != 1 || rel != 1 {
		t.Fatalf("call stats %d calls, %d relayed; want 1, 1", calls, rel)
	}
	if err := trV.Verify(ctx, relayed); err != nil {
		t.Fatalf("verify a relayed contact: %v", err)
	}
	liar := relayed
	liar.Addr = "203.0.113.9:4001"
	if err := trV.Verify(ctx, liar); !errors.Is(err, ring.ErrBadPeer) {
		t.Fatalf("verify a relayed contact claiming another IP: %v, want ErrBadPeer", err)
	}
	// Once x holds a direct connection with v, v reads the IP from it.
	if err := x.Connect(ctx, peer.AddrInfo{ID: v.ID(), Addrs: v.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if err := trV.Verify(ctx, relayed); err != nil {
		t.Fatalf("verify over a direct connection: %v", err)
	}
	if err := trV.Verify(ctx, liar); !errors.Is(err, ring.ErrBadPeer) {
		t.Fatalf("liar over a direct connection: %v, want ErrBadPeer", err)
	}
}
