package reach

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

func TestListenKinds(t *testing.T) {
	for _, tc := range []struct {
		listen              string
		unspecified, mapped bool
	}{
		{"0.0.0.0:4001", true, true},
		{"[::]:4001", true, true},
		{"192.168.1.5:4001", false, true},
		{"10.0.0.2:0", false, true},
		{"[fd00::1]:4001", false, true},
		{"127.0.0.1:4001", false, false},
		{"203.0.113.7:4001", false, false},
		{"not an address", false, false},
	} {
		if got := ListensUnspecified(tc.listen); got != tc.unspecified {
			t.Errorf("ListensUnspecified(%q) = %v, want %v", tc.listen, got, tc.unspecified)
		}
		if got := WantsPortMap(tc.listen); got != tc.mapped {
			t.Errorf("WantsPortMap(%q) = %v, want %v", tc.listen, got, tc.mapped)
		}
	}
}

func TestTCP4(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string // "" : not a plain /ip4/…/tcp/…
	}{
		{"/ip4/203.0.113.7/tcp/4001", "203.0.113.7:4001"},
		{"/ip4/127.0.0.1/tcp/0", "127.0.0.1:0"},
		{"/ip4/203.0.113.7/udp/4001/quic-v1", ""},
		{"/ip6/::1/tcp/4001", ""},
		{"/ip4/203.0.113.7/tcp/4001/p2p-circuit", ""},
	} {
		a, err := ma.NewMultiaddr(tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		ap, ok := TCP4(a)
		got := ""
		if ok {
			got = ap.String()
		}
		if got != tc.want {
			t.Errorf("TCP4(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestRingAddress: an announced address wins, a concrete listen address
// is its own ring address, port 0 leaves it to the caller, and a host on
// loopback listening on 0.0.0.0 finds no public address in time.
func TestRingAddress(t *testing.T) {
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(), libp2p.NoTransports, libp2p.Transport(tcp.NewTCPTransport))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		listen, announce, want, how string
		err                         bool
	}{
		{"0.0.0.0:4001", "203.0.113.7:4001", "203.0.113.7:4001", Announced, false},
		{"0.0.0.0:4001", "nonsense", "", "", true},
		{"127.0.0.1:4001", "", "127.0.0.1:4001", Listen, false},
		{"127.0.0.1:0", "", "", "", false},
	} {
		addr, how, err := RingAddress(ctx, h, tc.listen, tc.announce, time.Second)
		if addr != tc.want || how != tc.how || (err != nil) != tc.err {
			t.Errorf("RingAddress(%q, %q) = %q, %q, %v; want %q, %q, error %v", tc.listen, tc.announce, addr, how, err, tc.want, tc.how, tc.err)
		}
	}
	if _, _, ok := PublicAddr(h); ok {
		t.Error("a host on loopback has a public address")
	}
	_, _, err = RingAddress(ctx, h, "0.0.0.0:4001", "", 300*time.Millisecond)
	if !errors.Is(err, ErrNoPublicAddr) {
		t.Errorf("no public address: %v, want ErrNoPublicAddr", err)
	}
	if HasAddr(h, netip.MustParseAddrPort("203.0.113.7:4001")) {
		t.Error("HasAddr: an address the host does not have")
	}
	for _, a := range h.Addrs() {
		if ap, ok := TCP4(a); ok && !HasAddr(h, ap) {
			t.Errorf("HasAddr(%s) = false for the host's own address", ap)
		}
	}
	// WatchMapped returns when its context ends; a host on loopback never
	// gets a mapped address.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if addr, err := WatchMapped(wctx, h, "203.0.113.7:4001"); err == nil {
		t.Errorf("WatchMapped on loopback returned %q", addr)
	}
}
