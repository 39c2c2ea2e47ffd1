package ring

import (
	"context"
	"errors"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// offline is a Transport that reaches nobody: enough for a Ring whose
// tables a test sets by hand.
type offline struct{}

func (offline) Call(context.Context, Contact, *Message) (*Message, error) {
	return nil, errors.New("offline")
}
func (offline) Verify(context.Context, Contact) error { return errors.New("offline") }
func (offline) Handle(Handler)                        {}

// between returns an id strictly inside (a, b) when b is well after a.
func between(a, b id.ID) id.ID {
	x := a
	for i := 0; i < 140; i++ {
		y := x.AddPow2(i)
		if id.InOpen(y, a, b) {
			x = y
		}
	}
	return x
}

func TestCloserOwner(t *testing.T) {
	self := Contact{Peer: "peer-a", Addr: "10.0.0.1:4001"}
	other := Contact{Peer: "peer-b", Addr: "10.0.0.2:4001"}
	r, err := New(Config{Self: self, VirtualServers: 2}, offline{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	vs := r.Vnodes() // sorted by id
	a, b := vs[0].ID, vs[1].ID
	p := Node{ID: between(a, b), Contact: other} // another node's vnode before b
	r.mu.Lock()
	r.local(b).pred = &p
	r.local(a).pred = &Node{ID: between(b, a), Contact: other}
	r.mu.Unlock()

	k := between(a, p.ID) // after a, before p: p or someone before it owns it
	if got, ok := r.CloserOwner(k); !ok || got.ID != p.ID {
		t.Errorf("key before b's predecessor: hint %v %v, want %s", got.ID.Short(), ok, p.ID.Short())
	}
	if got, ok := r.CloserOwner(p.ID); !ok || got.ID != p.ID {
		t.Errorf("key equal to b's predecessor: hint %v %v, want it", got.ID.Short(), ok)
	}
	if _, ok := r.CloserOwner(between(p.ID, b)); ok {
		t.Error("a key b owns got a hint")
	}

	// No hint from an unknown or a local predecessor.
	r.mu.Lock()
	r.local(b).pred = nil
	r.mu.Unlock()
	if _, ok := r.CloserOwner(k); ok {
		t.Error("hint without a predecessor")
	}
	r.mu.Lock()
	r.local(b).pred = &Node{ID: p.ID, Contact: self}
	r.mu.Unlock()
	if _, ok := r.CloserOwner(k); ok {
		t.Error("hint to a local virtual server")
	}
}
