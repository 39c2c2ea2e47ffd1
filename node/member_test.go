package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

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
