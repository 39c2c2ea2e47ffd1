package ringtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Endpoint is one real node of a transport under test.
type Endpoint struct {
	Contact   ring.Contact
	Transport ring.Transport
	// Kill makes the node stop answering (process death).
	Kill func()
}

// Factory returns n fresh endpoints that can reach each other.
type Factory func(t *testing.T, n int) []Endpoint

// echo is a handler that reports what it received.
func echo(ctx context.Context, from string, m *ring.Message) *ring.Message {
	return &ring.Message{Op: m.Op, Key: m.Key, Nodes: m.Nodes, From: &ring.Node{Contact: ring.Contact{Peer: from}}}
}

// Run runs the transport conformance suite.
func Run(t *testing.T, f Factory) {
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) {
		e := f(t, 2)
		e[1].Transport.Handle(echo)
		nodes := make([]ring.Node, 200)
		for i := range nodes {
			nodes[i] = ring.Node{ID: id.OfString(fmt.Sprint(i)), Contact: e[0].Contact, Index: i}
		}
		m := &ring.Message{Op: ring.OpStep, Key: id.OfString("k"), Nodes: nodes}
		reply, err := e[0].Transport.Call(ctx, e[1].Contact, m)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Op != m.Op || reply.Key != m.Key || len(reply.Nodes) != 200 || reply.Nodes[199] != nodes[199] {
			t.Fatalf("reply %+v does not echo the request", reply)
		}
		if reply.From.Peer != e[0].Contact.Peer {
			t.Fatalf("handler saw caller %q, want %q", reply.From.Peer, e[0].Contact.Peer)
		}
	})
	t.Run("WrongPeerAtAddress", func(t *testing.T) {
		e := f(t, 3)
		e[1].Transport.Handle(echo)
		e[2].Transport.Handle(echo)
		liar := ring.Contact{Peer: e[2].Contact.Peer, Addr: e[1].Contact.Addr}
		if _, err := e[0].Transport.Call(ctx, ring.Contact{Peer: e[1].Contact.Peer, Addr: e[1].Contact.Addr}, &ring.Message{Op: ring.OpPing}); err != nil {
			t.Fatalf("honest call: %v", err)
		}
		if err := e[0].Transport.Verify(ctx, e[1].Contact); err != nil {
			t.Fatalf("Verify honest: %v", err)
		}
		if err := e[0].Transport.Verify(ctx, liar); !errors.Is(err, ring.ErrBadPeer) {
			t.Fatalf("Verify liar = %v, want ErrBadPeer", err)
		}
	})
	t.Run("Dead", func(t *testing.T) {
		e := f(t, 2)
		e[1].Transport.Handle(echo)
		e[1].Kill()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := e[0].Transport.Call(cctx, e[1].Contact, &ring.Message{Op: ring.OpPing}); err == nil {
			t.Fatal("call to a dead node succeeded")
		}
		if err := e[0].Transport.Verify(cctx, e[1].Contact); err == nil || errors.Is(err, ring.ErrBadPeer) {
			t.Fatalf("Verify dead = %v, want an unreachable error", err)
		}
	})
	t.Run("NoHandler", func(t *testing.T) {
		e := f(t, 2)
		e[1].Transport.Handle(echo)
		e[1].Transport.Handle(nil)
		if _, err := e[0].Transport.Call(ctx, e[1].Contact, &ring.Message{Op: ring.OpPing}); err == nil {
			t.Fatal("call without a handler succeeded")
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		e := f(t, 3)
		for _, x := range e {
			x.Transport.Handle(echo)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 30)
		for i := range 30 {
			wg.Go(func() {
				from, to := e[i%3], e[(i+1)%3]
				key := id.OfString(fmt.Sprint(i))
				reply, err := from.Transport.Call(ctx, to.Contact, &ring.Message{Op: ring.OpStep, Key: key})
				if err == nil && reply.Key != key {
					err = fmt.Errorf("reply key %s, want %s", reply.Key.Short(), key.Short())
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}
