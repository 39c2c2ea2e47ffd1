package p2phost

import (
	"testing"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/ring"
)

const (
	testPeer  = "12D3KooWGRUVh1ACX2BnBQHVJYGjErx7rp9pW5CZJ3AKk3dj7A8A"
	testRelay = "12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq"
)

func TestParseContact(t *testing.T) {
	circuit := "/ip4/203.0.113.5/tcp/4001/p2p/" + testRelay + "/p2p-circuit/p2p/" + testPeer
	for _, tc := range []struct {
		in   string
		want ring.Contact
	}{
		{"/ip4/192.0.2.1/tcp/4001/p2p/" + testPeer, ring.Contact{Peer: testPeer, Addr: "192.0.2.1:4001"}},
		{"/ip6/2001:db8::1/tcp/4001/p2p/" + testPeer, ring.Contact{Peer: testPeer, Addr: "[2001:db8::1]:4001"}},
		{circuit, ring.Contact{Peer: testPeer, Addr: "203.0.113.5:4001", Relay: "/ip4/203.0.113.5/tcp/4001/p2p/" + testRelay}},
	} {
		got, err := ParseContact(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseContact(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"192.0.2.1:4001",                          // no multiaddr
		"/ip4/192.0.2.1/tcp/4001",                 // no peer id
		"/ip4/192.0.2.1/udp/4001/p2p/" + testPeer, // no TCP port
		"/dns4/example.org/tcp/4001/p2p/" + testPeer,
	} {
		if c, err := ParseContact(bad); err == nil {
			t.Errorf("ParseContact(%s) = %+v, want an error", bad, c)
		}
	}
}

// TestRelayContactOf: a relayed connection's remote address ends at
// p2p-circuit, so the peer id comes from the caller; a direct address is
// no circuit.
func TestRelayContactOf(t *testing.T) {
	m := ma.StringCast("/ip4/203.0.113.5/tcp/4001/p2p/" + testRelay + "/p2p-circuit")
	c, ok := RelayContactOf(m, testPeer)
	if want := (ring.Contact{Peer: testPeer, Addr: "203.0.113.5:4001", Relay: "/ip4/203.0.113.5/tcp/4001/p2p/" + testRelay}); !ok || c != want {
		t.Fatalf("RelayContactOf = %+v, %v; want %+v", c, ok, want)
	}
	if _, ok := RelayContactOf(m, ""); ok {
		t.Fatal("a circuit address without a peer id gave a contact")
	}
	if _, ok := RelayContactOf(ma.StringCast("/ip4/192.0.2.1/tcp/4001/p2p/"+testPeer), testPeer); ok {
		t.Fatal("a direct address gave a relay contact")
	}
}

// TestJoinAddr: a contact's --join address reads back as the contact,
// direct or through its relay; a contact without a valid peer id has
// none.
func TestJoinAddr(t *testing.T) {
	relay := "/ip4/203.0.113.5/tcp/4001/p2p/" + testRelay
	for _, c := range []ring.Contact{
		{Peer: testPeer, Addr: "192.0.2.1:4001"},
		{Peer: testPeer, Addr: "203.0.113.5:4001", Relay: relay},
	} {
		a := JoinAddr(c)
		if got, err := ParseContact(a); err != nil || got != c {
			t.Errorf("JoinAddr(%+v) = %s, read back as %+v, %v", c, a, got, err)
		}
	}
	if a := JoinAddr(ring.Contact{Peer: "nobody", Addr: "192.0.2.1:4001"}); a != "" {
		t.Errorf("JoinAddr of a bad peer id = %q", a)
	}
}

// TestMembers: successors then the predecessor of each virtual server,
// each peer once, never this node, and no member without an address.
func TestMembers(t *testing.T) {
	self := ring.Node{Contact: ring.Contact{Peer: "12D3KooWSelf"}}
	a := ring.Node{Contact: ring.Contact{Peer: testPeer, Addr: "192.0.2.1:4001"}}
	b := ring.Node{Contact: ring.Contact{Peer: testRelay, Addr: "192.0.2.2:4001"}}
	bad := ring.Node{Contact: ring.Contact{Peer: "nobody", Addr: "192.0.2.3:4001"}}
	st := ring.Status{Vnodes: []ring.VnodeStatus{
		{Successors: []ring.Node{self, b, bad}, Predecessor: &a},
		{Successors: []ring.Node{a, b}, Predecessor: &self},
	}}
	got := Members(st, self.Peer)
	want := []string{"/ip4/192.0.2.2/tcp/4001/p2p/" + testRelay, "/ip4/192.0.2.1/tcp/4001/p2p/" + testPeer}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Members = %v, want %v", got, want)
	}
}
