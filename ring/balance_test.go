package ring_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

func at(b byte) id.ID { return id.ID{b} }

func TestPickIndexes(t *testing.T) {
	cands := []ring.Candidate{
		{Index: 0, ID: at(0x11), Pred: at(0x10), Succ: at(0x20)}, // splits 1:15
		{Index: 1, ID: at(0x48), Pred: at(0x40), Succ: at(0x50)}, // splits 8:8 of a small gap
		{Index: 2, ID: at(0x90), Pred: at(0x60), Succ: at(0xc0)}, // splits 0x30:0x30
		{Index: 3, ID: at(0xf0), Pred: at(0xe0), Succ: at(0x10)}, // wraps: 0x10:0x20
	}
	tests := []struct {
		want int
		got  []int
	}{
		{1, []int{2}},
		{2, []int{2, 3}},
		{3, []int{1, 2, 3}},
		{9, []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		if got := ring.PickIndexes(cands, tt.want); !slices.Equal(got, tt.got) {
			t.Errorf("PickIndexes(%d) = %v, want %v", tt.want, got, tt.got)
		}
	}
}

func TestChooseIndexesAndRestart(t *testing.T) {
	c := newCluster(t, 0, 4)
	var chosen [][]int
	for i := range 6 {
		self := contactOf(i)
		r, err := ring.New(ring.Config{Self: self, VirtualServers: 4, ChooseIndexes: true, Clock: c.clock}, c.net.Transport(self))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		c.rings = append(c.rings, r)
	}
	c.joinAll()
	waitConsistent(t, c, 30)
	checkLookups(t, c.live(), 50)
	for _, r := range c.rings[1:] {
		idx := r.Indexes()
		if len(idx) != 4 || slices.Max(idx) >= ring.DefaultMaxVirtualServers {
			t.Fatalf("indexes %v", idx)
		}
		if slices.Equal(idx, []int{0, 1, 2, 3}) {
			t.Logf("%s kept the first indexes", r.Self())
		}
		for _, v := range r.Vnodes() {
			if err := ring.CheckID(v, ring.DefaultMaxVirtualServers); err != nil {
				t.Fatal(err)
			}
		}
		chosen = append(chosen, idx)
	}
	if slices.EqualFunc(chosen, chosen[1:], func(a, b []int) bool { return slices.Equal(a, b) }) && slices.Equal(chosen[0], []int{0, 1, 2, 3}) {
		t.Fatal("no node chose anything but the default indexes")
	}
	// Restart node 2 at the same positions.
	old := c.rings[2]
	idx := old.Indexes()
	old.Close()
	self := old.Self()
	again, err := ring.New(ring.Config{Self: self, Indexes: idx, ChooseIndexes: true, Clock: c.clock}, c.net.Transport(self))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.Indexes(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(idx))) {
		t.Fatalf("restart indexes %v, want %v", got, idx)
	}
	if err := again.Join(context.Background(), c.rings[0].Self()); err != nil {
		t.Fatal(err)
	}
	if got := again.Indexes(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(idx))) {
		t.Fatalf("join with fixed indexes changed them: %v, want %v", got, idx)
	}
	for _, bad := range [][]int{{64}, {1, 1}, {-1}} {
		if _, err := ring.New(ring.Config{Self: self, Indexes: bad}, c.net.Transport(self)); !errors.Is(err, ring.ErrConfig) {
			t.Errorf("Indexes %v: %v, want ErrConfig", bad, err)
		}
	}
}
