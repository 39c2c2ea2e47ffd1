package resolve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/archivetest"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/ring"
)

var t0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// ownerRing says owner owns every key and is alone on the ring.
type ownerRing struct{ owner ring.Node }

func (r ownerRing) OwnerVnode(id.ID) (ring.Node, bool) { return ring.Node{}, false }

func (r ownerRing) Lookup(context.Context, id.ID) (ring.Node, error) { return r.owner, nil }

// pair returns services a and b on one mock network, each with a store
// holding two days of its URLs; b owns every key.
func pair(t *testing.T, aURLs, bURLs []string) (a, b *Service) {
	t.Helper()
	hs := p2ptest.Hosts(t, 2)
	var svcs []*Service
	for i, urls := range [][]string{aURLs, bURLs} {
		h := hs[i]
		sv := &Service{Store: archivetest.TwoDays(t, t0, urls...), Self: ring.Contact{Peer: h.ID().String(), Addr: h.ID().ShortString()},
			K: 3, Open: p2ptest.Opener(h), Gate: func(network.Stream) bool { return true }, Base: context.Background}
		h.SetStreamHandler(Protocol, sv.Handle)
		svcs = append(svcs, sv)
	}
	a, b = svcs[0], svcs[1]
	owner := ring.Node{ID: id.OfString("owner"), Contact: b.Self}
	a.Ring, b.Ring = ownerRing{owner}, ownerRing{owner}
	return a, b
}

// TestAskOwner: versions and captures come from the owner over Protocol;
// a URL nobody holds is no error for Versions and ErrNotFound for Get.
func TestAskOwner(t *testing.T) {
	ctx := context.Background()
	a, _ := pair(t, nil, []string{"http://h.example/a"})
	vs, err := a.Versions(ctx, "http://h.example/a")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions: %d, %v", len(vs), err)
	}
	v, c, err := a.Get(ctx, "http://h.example/a", t0.Add(36*time.Hour))
	if err != nil || !v.Time.Equal(t0.Add(24*time.Hour)) || !strings.Contains(string(c.Body), "day 1") {
		t.Fatalf("get: %+v, %v", v, err)
	}
	if _, c, err = a.Get(ctx, "http://h.example/a", t0.Add(-time.Hour)); err != nil || !strings.Contains(string(c.Body), "day 0") {
		t.Fatalf("get before the first capture: %v; want the oldest", err)
	}
	if vs, err := a.Versions(ctx, "http://h.example/none"); err != nil || vs != nil {
		t.Fatalf("versions of an unknown URL: %v, %v", vs, err)
	}
	if _, _, err := a.Get(ctx, "http://h.example/none", t0); !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("get of an unknown URL: %v", err)
	}
}

// TestAskReplica: with the owner's handler gone, this node's own store
// (a replica) answers; a non-member and an unknown op are refused.
func TestAskReplica(t *testing.T) {
	ctx := context.Background()
	a, b := pair(t, []string{"http://h.example/a"}, []string{"http://h.example/a"})
	b.Gate = func(s network.Stream) bool { s.Reset(); return false }
	if vs, err := a.Versions(ctx, "http://h.example/a"); err != nil || len(vs) != 2 {
		t.Fatalf("versions from the replica: %d, %v", len(vs), err)
	}
	if _, _, err := a.fetchRemote(ctx, b.Self, Request{Op: "versions", URL: "http://h.example/a"}); err == nil {
		t.Fatal("a non-member was answered")
	}
	b.Gate = func(network.Stream) bool { return true }
	if _, _, err := a.fetchRemote(ctx, b.Self, Request{Op: "delete", URL: "http://h.example/a"}); !errors.Is(err, errRemote) {
		t.Fatalf("unknown op: %v", err)
	}
}
