package links

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// vnodeRing is a ring of virtual servers over a few real nodes, in
// memory: the owner of a key is the first server at or after it, and
// Successors walks on to the next distinct real nodes.
type vnodeRing struct{ vs []ring.Node }

func (r vnodeRing) Successors(_ context.Context, key id.ID, k int) ([]ring.Node, error) {
	i, _ := slices.BinarySearchFunc(r.vs, key, func(v ring.Node, key id.ID) int { return v.ID.Cmp(key) })
	var out []ring.Node
	for j := 0; j < len(r.vs) && len(out) < k; j++ {
		v := r.vs[(i+j)%len(r.vs)]
		if !slices.ContainsFunc(out, func(o ring.Node) bool { return o.Peer == v.Peer }) {
			out = append(out, v)
		}
	}
	return out, nil
}

// TestDeliverOneRequestPerNode checks that a Deliver whose targets fall
// in every virtual server of a ring of 4 real nodes (4 servers each,
// 3 holders a target) sends each other node one request, and that every
// record reaches the three holders of its target and no other node.
func TestDeliverOneRequestPerNode(t *testing.T) {
	const nodes, perNode = 4, 4
	hosts := p2ptest.Hosts(t, nodes)
	var vr vnodeRing
	idx := make([]*Index, nodes)
	servers := make([]*Server, nodes)
	for i, h := range hosts {
		x, err := Open(t.TempDir(), Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		idx[i], servers[i] = x, &Server{Index: x}
		c := ring.Contact{Peer: h.ID().String(), Addr: fmt.Sprintf("127.0.0.%d:4001", i+1)}
		kt := kit.New(kit.Config{Host: h, Gate: func(network.Stream) (ring.Node, error) { return ring.Node{Contact: c}, nil }})
		kt.MustHandle(servers[i].Spec())
		for v := range perNode {
			vr.vs = append(vr.vs, ring.Node{ID: id.OfString(fmt.Sprintf("vs-%d-%d", i, v)), Contact: c, Index: v})
		}
	}
	slices.SortFunc(vr.vs, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })

	var mu sync.Mutex
	opened := map[string]int{}
	open := p2ptest.Opener(hosts[0])
	rt := &Router{Ring: vr, Self: hosts[0].ID().String(), Local: servers[0], Client: &Client{
		Open: func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error) {
			mu.Lock()
			opened[c.Peer]++
			mu.Unlock()
			return open(ctx, c, p)
		},
	}}

	seen := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var recs []Record
	for i := range 400 {
		recs = append(recs, Record{Target: fmt.Sprintf("http://t%d.test/p%d", i%37, i), Source: "http://src.test/", From: seen, Seen: seen})
	}
	ctx := context.Background()
	if err := rt.Deliver(ctx, recs); err != nil {
		t.Fatal(err)
	}
	for i, h := range hosts {
		if n := opened[h.ID().String()]; i > 0 && n != 1 {
			t.Errorf("node %d was sent %d requests, want 1", i, n)
		}
	}
	if n := opened[hosts[0].ID().String()]; n != 0 {
		t.Errorf("%d streams to the delivering node itself, want 0", n)
	}
	for _, r := range recs {
		hs, _ := vr.Successors(ctx, id.OfString(r.Target), DefaultHolders)
		for i, h := range hosts {
			res, err := idx[i].Links(ctx, r.Target, time.Time{}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			holds := slices.ContainsFunc(hs, func(n ring.Node) bool { return n.Peer == h.ID().String() })
			if got := len(res.Records) == 1; got != holds {
				t.Fatalf("%s on node %d: %d records, holder %v", r.Target, i, len(res.Records), holds)
			}
		}
	}
}

// TestDeliverOwnerFailure checks that a Deliver fails when a node that
// owns some of the targets does not take them, still delivers the other
// nodes' records, and counts a failed holder that owns none.
func TestDeliverOwnerFailure(t *testing.T) {
	self := ring.Contact{Peer: "self"}
	down := ring.Contact{Peer: "down"}
	x, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	vr := vnodeRing{vs: []ring.Node{{ID: id.OfString("a"), Contact: self}, {ID: id.OfString("b"), Contact: down}}}
	slices.SortFunc(vr.vs, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
	refused := errors.New("refused")
	rt := &Router{Ring: vr, Self: "self", Local: &Server{Index: x}, Holders: 2, Client: &Client{
		Open: func(context.Context, ring.Contact, protocol.ID) (network.Stream, error) { return nil, refused },
	}}
	seen := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var recs []Record
	for i := range 50 {
		recs = append(recs, Record{Target: fmt.Sprintf("http://t.test/%d", i), Source: "http://src.test/", From: seen, Seen: seen})
	}
	ctx := context.Background()
	err = rt.Deliver(ctx, recs)
	if !errors.Is(err, refused) {
		t.Fatalf("Deliver with an owner down: %v, want %v", err, refused)
	}
	for _, r := range recs {
		res, err := x.Links(ctx, r.Target, time.Time{}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 1 {
			t.Fatalf("%s: %d records on the node up, want 1 (it holds every target)", r.Target, len(res.Records))
		}
	}
	// With every target owned by the node up, the one down is a replica:
	// counted, not an error.
	rt.Ring = ownerThen{self: ring.Node{Contact: self}, next: ring.Node{Contact: down}}
	if err := rt.Deliver(ctx, recs); err != nil {
		t.Fatalf("Deliver with a replica down: %v", err)
	}
	if got := rt.Stats().ReplicaFails; got != 1 {
		t.Errorf("ReplicaFails = %d, want 1", got)
	}
}

// ownerThen is a ring in which self owns every key and next holds its
// second copies.
type ownerThen struct{ self, next ring.Node }

func (r ownerThen) Successors(_ context.Context, _ id.ID, k int) ([]ring.Node, error) {
	return []ring.Node{r.self, r.next}[:min(k, 2)], nil
}
