package ring_test

import (
	"testing"
	"time"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/memnet"
)

// BenchmarkOwns measures the fetch-time ownership check's common case
// (node/relocate.go asks Owns before every fetch): a range test over the
// node's 4 virtual servers under the ring's lock, random keys.
func BenchmarkOwns(b *testing.B) {
	net := memnet.New(memnet.Config{Seed: 1})
	self := contactOf(0)
	r, err := ring.New(ring.Config{Self: self, VirtualServers: 4, Clock: memnet.NewClock(time.Unix(1e9, 0))}, net.Transport(self))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for i := range b.N {
		if !r.Owns(keyN(i)) {
			b.Fatal("a lone node owns every key")
		}
	}
}
