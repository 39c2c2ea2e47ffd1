package ringtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/memnet"
	"github.com/herod-archive/herod/ring/ringtest"
)

// TestStable: three rings on a memnet are not stable before they have
// joined and stabilized, and are after.
func TestStable(t *testing.T) {
	ctx := context.Background()
	net, clock := memnet.New(memnet.Config{Seed: 1}), memnet.NewClock(time.Unix(1e9, 0))
	var rs []*ring.Ring
	for i := range 3 {
		self := ring.Contact{Peer: fmt.Sprintf("peer-%d", i), Addr: fmt.Sprintf("10.0.0.%d:4001", i+1)}
		r, err := ring.New(ring.Config{Self: self, VirtualServers: 2, Clock: clock}, net.Transport(self))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		rs = append(rs, r)
	}
	keys := ringtest.ProbeKeys(rs, 16)
	if len(keys) != 3*2*2+16 {
		t.Fatalf("%d probe keys, want %d", len(keys), 3*2*2+16)
	}
	if err := ringtest.Stable(ctx, rs, keys); err == nil {
		t.Fatal("three rings that never joined are stable")
	}
	for _, r := range rs[1:] {
		if err := r.Join(ctx, rs[0].Self()); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	for range 50 {
		for _, r := range rs {
			r.Maintain(ctx)
		}
		clock.Advance(ring.DefaultStabilizeInterval)
		if err = ringtest.Stable(ctx, rs, keys); err == nil {
			return
		}
	}
	t.Fatalf("not stable after 50 rounds: %v", err)
}
