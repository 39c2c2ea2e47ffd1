package memnet_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/memnet"
	"github.com/herod-archive/herod/ring/ringtest"
)

func factory(t *testing.T, n int) []ringtest.Endpoint {
	net := memnet.New(memnet.Config{Seed: 1})
	var out []ringtest.Endpoint
	for i := range n {
		c := ring.Contact{Peer: fmt.Sprintf("p%d", i), Addr: fmt.Sprintf("10.0.0.%d:1", i+1)}
		out = append(out, ringtest.Endpoint{Contact: c, Transport: net.Transport(c), Kill: func() { net.Kill(c.Addr) }})
	}
	return out
}

func TestSuite(t *testing.T) { ringtest.Run(t, factory) }

func TestControls(t *testing.T) {
	ctx := context.Background()
	net := memnet.New(memnet.Config{Seed: 7, CallTimeout: 100 * time.Millisecond})
	a := net.Transport(ring.Contact{Peer: "a", Addr: "10.0.0.1:1"})
	b := net.Transport(ring.Contact{Peer: "b", Addr: "10.0.0.2:1"})
	b.Handle(func(context.Context, string, *ring.Message) *ring.Message { return &ring.Message{} })
	call := func() error { _, err := a.Call(ctx, b.Contact(), &ring.Message{Op: ring.OpPing}); return err }

	tests := []struct {
		name  string
		setup func()
		ok    bool
	}{
		{"normal", func() {}, true},
		{"partitioned", func() { net.Partition([]string{"10.0.0.1:1"}) }, false},
		{"healed", net.Heal, true},
		{"slow link", func() { net.SetLatency("10.0.0.1:1", "10.0.0.2:1", 60*time.Millisecond) }, false},
		{"fast link", func() { net.SetLatency("10.0.0.1:1", "10.0.0.2:1", 10*time.Millisecond) }, true},
		{"killed", func() { net.Kill("10.0.0.2:1") }, false},
		{"revived", func() { net.Revive("10.0.0.2:1") }, true},
		{"sender killed", func() { net.Kill("10.0.0.1:1") }, false},
	}
	for _, tt := range tests {
		tt.setup()
		if err := call(); (err == nil) != tt.ok {
			t.Fatalf("%s: call err = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if st := net.Stats(); st.Latency != 40*time.Millisecond || st.TimedOut != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLossIsSeeded(t *testing.T) {
	run := func() (lost int) {
		net := memnet.New(memnet.Config{Seed: 42})
		a := net.Transport(ring.Contact{Peer: "a", Addr: "10.0.0.1:1"})
		b := net.Transport(ring.Contact{Peer: "b", Addr: "10.0.0.2:1"})
		b.Handle(func(context.Context, string, *ring.Message) *ring.Message { return &ring.Message{} })
		net.SetLoss(0.3)
		for range 1000 {
			if _, err := a.Call(context.Background(), b.Contact(), &ring.Message{}); err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatal(err)
				}
				lost++
			}
		}
		return lost
	}
	x, y := run(), run()
	if x != y || x < 250 || x > 350 {
		t.Fatalf("lost %d then %d of 1000 at p=0.3", x, y)
	}
}

func TestClock(t *testing.T) {
	c := memnet.NewClock(time.Unix(0, 0))
	ch := c.After(time.Second)
	c.Advance(999 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	if c.Waiters() != 1 {
		t.Fatalf("%d waiters", c.Waiters())
	}
	c.Advance(time.Millisecond)
	if got := <-ch; !got.Equal(time.Unix(1, 0)) {
		t.Fatalf("fired at %v", got)
	}
	if c.Waiters() != 0 {
		t.Fatal("timer not removed")
	}
}
