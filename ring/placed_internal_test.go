package ring

import (
	"context"
	"errors"
	"testing"
)

// knownAlready answers every lookup step with the owner the ring already
// knows for the key: this node's own virtual server of that id.
type knownAlready struct{ self Contact }

func (k knownAlready) Call(_ context.Context, _ Contact, m *Message) (*Message, error) {
	if m.Op != OpStep {
		return nil, errors.New("offline")
	}
	for i := range DefaultMaxVirtualServers {
		if VirtualID(k.self.Addr, i) == m.Key {
			n := Node{ID: m.Key, Contact: k.self, Index: i}
			return &Message{Op: OpStep, Done: true, From: &n, Owners: []Node{n}}, nil
		}
	}
	return nil, errors.New("no such virtual server")
}
func (knownAlready) Verify(context.Context, Contact) error { return nil }
func (knownAlready) Handle(Handler)                        {}

// TestPlacedReportsTook: a virtual server a move placed, which the ring
// learnt of before its join (a lookup of its id finds it already), still
// reports the range it took (Config.Took) with the holder the move found;
// one that was a member all along reports nothing.
func TestPlacedReportsTook(t *testing.T) {
	self := Contact{Peer: "peer-a", Addr: "10.0.0.1:4001"}
	held := Node{ID: VirtualID("10.0.0.2:4001", 0), Contact: Contact{Peer: "peer-b", Addr: "10.0.0.2:4001"}}
	var took [][2]Node
	r, err := New(Config{Self: self, VirtualServers: 1,
		Took: func(v, former Node) { took = append(took, [2]Node{v, former}) }}, knownAlready{self})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	placed := Node{ID: VirtualID(self.Addr, 3), Contact: self, Index: 3}
	r.mu.Lock()
	r.joined = true
	r.vnodes = append(r.vnodes, &vnode{self: placed, placed: &held})
	r.mu.Unlock()
	if _, err := r.joinVnodes(context.Background(), held.Contact); err != nil {
		t.Fatal(err)
	}
	if len(took) != 1 || took[0][0] != placed || took[0][1] != held {
		t.Fatalf("Took calls %v, want one: the placed virtual server from %v", took, held)
	}
	r.mu.Lock()
	left := r.local(placed.ID).placed
	r.mu.Unlock()
	if left != nil {
		t.Error("the placed holder is kept after its report")
	}
}

// TestOwnsLastKnown: while a virtual server's predecessor is unknown
// (forgotten after it stopped answering), Owns gives up its range and
// OwnsLastKnown keeps the range it last knew.
func TestOwnsLastKnown(t *testing.T) {
	self := Contact{Peer: "peer-a", Addr: "10.0.0.1:4001"}
	other := Contact{Peer: "peer-b", Addr: "10.0.0.2:4001"}
	r, err := New(Config{Self: self, VirtualServers: 1}, offline{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v := r.Vnodes()[0].ID
	p := Node{ID: between(v.AddPow2(100), v), Contact: other}
	inside, outside := between(p.ID, v), between(v, p.ID)
	r.mu.Lock()
	r.local(v).setPred(&p, nil)
	r.mu.Unlock()
	if !r.Owns(inside) || !r.OwnsLastKnown(inside) || r.OwnsLastKnown(outside) {
		t.Fatal("with a known predecessor: want the range (p, v] by both")
	}
	r.mu.Lock()
	r.local(v).setPred(nil, nil) // the predecessor stopped answering
	r.mu.Unlock()
	if r.Owns(inside) {
		t.Error("Owns with the predecessor unknown: true")
	}
	if !r.OwnsLastKnown(inside) || r.OwnsLastKnown(outside) {
		t.Error("OwnsLastKnown with the predecessor unknown: want the last known range")
	}
}
