package member

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

func TestContactAddr(t *testing.T) {
	m := func(s string) ma.Multiaddr { return ma.StringCast(s) }
	for _, c := range []struct {
		remote    string
		announced []string
		want      string
		ok        bool
	}{
		{"/ip4/127.0.0.1/tcp/4001", nil, "127.0.0.1:4001", true},
		{"/ip4/10.0.0.1/udp/4001/quic-v1", []string{"/ip4/10.0.0.1/tcp/4001"}, "10.0.0.1:4001", true},
		{"/ip6/::1/tcp/4001", []string{"/ip6/::1/tcp/4001"}, "", false},
		{"/ip4/10.0.0.1/udp/4001/quic-v1", nil, "", false},
	} {
		var ann []ma.Multiaddr
		for _, a := range c.announced {
			ann = append(ann, m(a))
		}
		got, ok := contactAddr(m(c.remote), ann)
		if got != c.want || ok != c.ok {
			t.Errorf("contactAddr(%s, %v) = %q, %v; want %q, %v", c.remote, c.announced, got, ok, c.want, c.ok)
		}
	}
}

// TestMemberCache: answers expire, and a full cache is cleared rather
// than grown.
func TestMemberCache(t *testing.T) {
	var c memberCache
	now := time.Unix(1_700_000_000, 0)
	c.put("a", memberEntry{node: ring.Node{Index: 1}, until: now.Add(memberTTL)})
	if e, ok := c.get("a", now); !ok || e.node.Index != 1 {
		t.Fatalf("get a = %+v, %v", e, ok)
	}
	if _, ok := c.get("a", now.Add(memberTTL)); ok {
		t.Fatal("expired answer returned")
	}
	for i := range maxMemberCache + 1 {
		c.put(peer.ID(fmt.Sprint(i)), memberEntry{until: now.Add(time.Hour)})
	}
	if n := len(c.m); n > maxMemberCache {
		t.Fatalf("%d cached answers, bound %d", n, maxMemberCache)
	}
}

// gateRing admits every virtual server but bad, knows known in its
// routing state, and its lookups find owner.
type gateRing struct {
	known, owner ring.Node
	bad          string
}

func (r gateRing) Status() ring.Status {
	return ring.Status{Vnodes: []ring.VnodeStatus{{Successors: []ring.Node{r.known}}}}
}

func (r gateRing) Admit(_ context.Context, v ring.Node) error {
	if v.Peer == r.bad {
		return errors.New("address does not authenticate")
	}
	return nil
}

func (r gateRing) Lookup(context.Context, id.ID) (ring.Node, error) { return r.owner, nil }

// TestGateDecides: this node, a purged peer and a peer whose virtual
// server is not in the ring are refused (and counted once, then cached);
// a peer in the routing state, or one a lookup finds, is a member.
func TestGateDecides(t *testing.T) {
	ctx := context.Background()
	pid := func(i int) peer.ID {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, err := peer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	self, known, asked, purged, stranger := pid(0), pid(1), pid(2), pid(3), pid(4)
	vn := func(p peer.ID, addr string) ring.Node {
		return ring.Node{ID: ring.VirtualID(addr, 0), Contact: ring.Contact{Peer: p.String(), Addr: addr}}
	}
	knownV, askedV, strangerV := vn(known, "10.0.0.1:4001"), vn(asked, "10.0.0.2:4001"), vn(stranger, "10.0.0.3:4001")
	r := &gateRing{known: knownV, owner: askedV}
	g := &Gate{Self: self.String(), Ring: r,
		Call: func(_ context.Context, c ring.Contact, _ *ring.Message) (*ring.Message, error) {
			if c.Peer == asked.String() {
				return &ring.Message{From: &askedV}, nil
			}
			return &ring.Message{From: &strangerV}, nil
		},
		Addrs:   func(peer.ID) []ma.Multiaddr { return nil },
		Refuses: func(p string) bool { return p == purged.String() },
	}
	remote := ma.StringCast("/ip4/10.0.0.9/tcp/4001")
	for _, p := range []peer.ID{self, purged, stranger, stranger} {
		if _, err := g.memberPeer(ctx, p, remote); !errors.Is(err, ErrNotMember) {
			t.Fatalf("peer %s: %v, want a refusal", p, err)
		}
	}
	if st := g.Stats(); st.NotMember != 3 {
		t.Fatalf("%d refusals counted, want 3 (the repeated one is cached)", st.NotMember)
	}
	// A refusal by this node's view of the ring (the stranger's virtual
	// server is not where a lookup looks) is kept for notPlacedTTL only,
	// a purge for notMemberTTL.
	later := time.Now().Add(notPlacedTTL + time.Second)
	if _, ok := g.cache.get(stranger, later); ok {
		t.Errorf("the stranger's refusal is cached past notPlacedTTL")
	}
	if _, ok := g.cache.get(purged, later); !ok {
		t.Errorf("the purged peer's refusal is not cached for notMemberTTL")
	}
	for p, want := range map[peer.ID]ring.Node{known: knownV, asked: askedV} {
		if v, err := g.memberPeer(ctx, p, remote); err != nil || v != want {
			t.Fatalf("peer %s: %v, %v; want member %v", p, v, err, want)
		}
	}
	g.RefuseRole(knownV, "/herod/test/1.0.0", errors.New("outside its role"))
	if st := g.Stats(); st.Role != 1 {
		t.Fatalf("role refusals %d, want 1", st.Role)
	}
}
