package dayclaim

import (
	"context"
	"errors"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// viewRing is a Relocator's ring: no local virtual server owns a key;
// closer, if set, is a closer owner; else lookups answer owner (or fail).
type viewRing struct {
	closer *ring.Node
	owner  ring.Node
	fail   bool
}

func (v viewRing) OwnerVnode(id.ID) (ring.Node, bool) { return ring.Node{}, false }

func (v viewRing) LocalOwner(id.ID) (ring.Node, bool) { return ring.Node{}, false }

func (v viewRing) CloserOwner(id.ID) (ring.Node, bool) {
	if v.closer != nil {
		return *v.closer, true
	}
	return ring.Node{}, false
}

func (v viewRing) Lookup(context.Context, id.ID) (ring.Node, error) {
	if v.fail {
		return ring.Node{}, errors.New("lookup failed")
	}
	return v.owner, nil
}

// TestRelocatorMoved: a URL another node owns by the ring's view has
// moved; a failed lookup keeps it here; with replica links nothing moves.
func TestRelocatorMoved(t *testing.T) {
	ctx := context.Background()
	other := ring.Node{Contact: ring.Contact{Peer: "other", Addr: "127.0.0.2:4001"}}
	r := &Relocator{Ring: viewRing{owner: other}, Self: "me", Day: func() int64 { return 1 }}
	if !r.Moved(ctx, "http://a.example/") {
		t.Fatal("a URL another node owns did not move")
	}
	r.Ring = viewRing{closer: &other}
	if !r.Moved(ctx, "http://a.example/") {
		t.Fatal("a URL with a closer owner did not move")
	}
	r.Ring = viewRing{fail: true}
	if r.Moved(ctx, "http://a.example/") {
		t.Fatal("a URL moved on a failed lookup")
	}
	if n := r.OwnerChecks(); n != 3 {
		t.Fatalf("%d owner checks, want 3", n)
	}
	r.Replicas = 2
	if r.Moved(ctx, "http://a.example/") || r.OwnerChecks() != 3 {
		t.Fatal("a URL moved with replica links")
	}
}

// TestRelocatorPassOn: a URL passed on waits in the forwarder as a link
// passed on once.
func TestRelocatorPassOn(t *testing.T) {
	f, err := forward.New(forward.Config{Ring: viewRing{}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Relocator{Forwarder: f, Ring: viewRing{}, Self: "me", Day: func() int64 { return 1 },
		Claims: claim.New(claim.Config{Peer: "me", Ring: noVnodes{}, Transport: Transport{}})}
	if err := r.PassOn(context.Background(), "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.Pending != 1 {
		t.Fatalf("forwarder stats %+v: want the URL pending", st)
	}
}

// ownRing is a Relocator's ring where the local virtual server v owns
// every key.
type ownRing struct{ v ring.Node }

func (o ownRing) OwnerVnode(id.ID) (ring.Node, bool)  { return o.v, true }
func (o ownRing) CloserOwner(id.ID) (ring.Node, bool) { return ring.Node{}, false }
func (o ownRing) Lookup(context.Context, id.ID) (ring.Node, error) {
	return o.v, nil
}

// TestRelocatorConfirms: a URL a former owner fetched today is not
// fetched again, unless this node holds a handed-off record of it that
// only its own fetch may confirm (Confirms).
func TestRelocatorConfirms(t *testing.T) {
	ctx := context.Background()
	u := "http://a.example/held"
	former := ring.Node{ID: ring.VirtualID("127.0.0.2:4001", 0), Contact: ring.Contact{Peer: "former", Addr: "127.0.0.2:4001"}}
	me := ring.Node{ID: ring.VirtualID("127.0.0.1:4001", 0), Contact: ring.Contact{Peer: "me", Addr: "127.0.0.1:4001"}}
	c := claim.New(claim.Config{Peer: "me", Ring: noVnodes{}, Transport: Transport{}})
	if err := c.HandedOver(former, claim.Handover{Day: 1, Vnode: former, Keys: []id.ID{id.OfString(u)}}, 1); err != nil {
		t.Fatal(err)
	}
	r := &Relocator{Ring: ownRing{me}, Claims: c, Self: "me", Day: func() int64 { return 1 }}
	if !r.Moved(ctx, u) {
		t.Fatal("a URL a former owner fetched today is fetched again")
	}
	r.Confirms = func(url string) bool { return url == u }
	if r.Moved(ctx, u) {
		t.Fatal("a URL with a held hand-off is not fetched")
	}
	if r.Moved(ctx, "http://a.example/other") {
		t.Fatal("a URL no claim covers moved")
	}
}
