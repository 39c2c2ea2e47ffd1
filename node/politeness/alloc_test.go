package politeness

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// allocClock is a settable clock for the allocator.
type allocClock struct {
	mu sync.Mutex
	t  time.Time
}

func newAllocClock() *allocClock { return &allocClock{t: time.Unix(1_700_000_000, 0)} }

func (c *allocClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *allocClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func slotMs(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

// TestSlotAllocator runs sequences of lease requests against one
// allocator: each step advances the clock, then asks for slots.
func TestSlotAllocator(t *testing.T) {
	type step struct {
		advance  time.Duration
		host     string
		k        int
		interval time.Duration
		want     []time.Duration
		retry    time.Duration
	}
	const iv = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first lease starts now", []step{
			{0, "a", 3, iv, slotMs(0, 100, 200), 0},
		}},
		{"second requester queues behind the first", []step{
			{0, "a", 3, iv, slotMs(0, 100, 200), 0},
			{0, "a", 2, iv, slotMs(300, 400), 0},
		}},
		{"delays are relative to the owner's now", []step{
			{0, "a", 3, iv, slotMs(0, 100, 200), 0},
			{150 * time.Millisecond, "a", 2, iv, slotMs(150, 250), 0},
		}},
		{"idle schedule restarts at now", []step{
			{0, "a", 1, iv, slotMs(0), 0},
			{time.Hour, "a", 2, iv, slotMs(0, 100), 0},
		}},
		{"last slot's spacing holds after a gap shorter than it", []step{
			{0, "a", 1, iv, slotMs(0), 0},
			{40 * time.Millisecond, "a", 1, iv, slotMs(60), 0},
		}},
		{"hosts have separate schedules", []step{
			{0, "a", 2, iv, slotMs(0, 100), 0},
			{0, "b", 2, iv, slotMs(0, 100), 0},
			{0, "a", 1, iv, slotMs(200), 0},
		}},
		{"crawl-delay spacing from the previous slot", []step{
			{0, "a", 2, iv, slotMs(0, 100), 0},
			{0, "a", 2, time.Second, slotMs(1100, 2100), 0},
			{0, "a", 1, iv, slotMs(2200), 0},
		}},
		{"k below one asks for one", []step{
			{0, "a", 0, iv, slotMs(0), 0},
			{0, "a", -5, iv, slotMs(100), 0},
		}},
		{"k capped at maxLeaseSlots", []step{
			{0, "a", 1000, time.Millisecond, nil, 0}, // checked by length below
		}},
		{"a requester's share of the horizon bounds a grant", []step{
			// 4 ticks within 30 s; a lone requester leaves half of them.
			{0, "a", 64, 10 * time.Second, slotMs(0, 10000), 0},
			{0, "a", 1, 10 * time.Second, nil, 10 * time.Second},
			{10 * time.Second, "a", 1, 10 * time.Second, slotMs(10000), 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newAllocClock()
			a := newSlotAllocator(clk.Now)
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				g := a.allocate(s.host, "", s.k, s.interval, 0)
				if tc.name == "k capped at maxLeaseSlots" { // 1 ms ticks: a share of 15,000
					if len(g.Delays) != maxLeaseSlots {
						t.Fatalf("step %d: %d slots, want %d", i, len(g.Delays), maxLeaseSlots)
					}
					continue
				}
				if !slices.Equal(g.Delays, s.want) || g.RetryAfter != s.retry {
					t.Fatalf("step %d: got %v retry %s, want %v retry %s", i, g.Delays, g.RetryAfter, s.want, s.retry)
				}
			}
		})
	}
}

// TestSlotAllocatorGlobalSpacing checks the invariant with many
// requesters: all slots granted for a host, converted to absolute owner
// time, are at least one interval apart.
func TestSlotAllocatorGlobalSpacing(t *testing.T) {
	clk := newAllocClock()
	a := newSlotAllocator(clk.Now)
	const iv = 50 * time.Millisecond
	var slots []time.Time
	for i := range 200 {
		clk.Advance(time.Duration(i%7) * 9 * time.Millisecond)
		now := clk.Now()
		spacing := time.Duration(i%4) * 40 * time.Millisecond
		prev := time.Time{}
		for _, d := range a.allocate("h", "", 1+i%5, iv, spacing).Delays {
			at := now.Add(d)
			if !prev.IsZero() && at.Sub(prev) < max(spacing, iv) {
				t.Fatalf("lease %d: slots %s apart, asked spacing %s", i, at.Sub(prev), spacing)
			}
			slots, prev = append(slots, at), at
		}
	}
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(slots); i++ {
		if gap := slots[i].Sub(slots[i-1]); gap < iv {
			t.Fatalf("slots %d and %d only %s apart", i-1, i, gap)
		}
	}
	if len(slots) < 200 {
		t.Fatalf("only %d slots granted", len(slots))
	}
}

// TestSlotAllocatorSpacing: a requester that can use a slot only every
// few ticks gets ticks that far apart, and the ticks in between go to the
// next requester.
func TestSlotAllocatorSpacing(t *testing.T) {
	clk := newAllocClock()
	a := newSlotAllocator(clk.Now)
	const iv = 100 * time.Millisecond
	steps := []struct {
		k       int
		spacing time.Duration
		want    []time.Duration
	}{
		{3, 250 * time.Millisecond, slotMs(0, 300, 600)}, // stride 3 ticks
		{3, 0, slotMs(100, 200, 400)},
		{2, 200 * time.Millisecond, slotMs(500, 700)},
		{1, 0, slotMs(800)},
	}
	for i, s := range steps {
		if g := a.allocate("h", "", s.k, iv, s.spacing); !slices.Equal(g.Delays, s.want) {
			t.Fatalf("step %d: got %v, want %v", i, g.Delays, s.want)
		}
	}
	// Time passes: ticks before now are gone, the rest stay taken.
	clk.Advance(450 * time.Millisecond)
	if g := a.allocate("h", "", 2, iv, 0); !slices.Equal(g.Delays, slotMs(450, 550)) {
		t.Fatalf("after 450ms: got %v, want [450ms 550ms] (ticks 900, 1000)", g.Delays)
	}
}

func TestSlotAllocatorEviction(t *testing.T) {
	clk := newAllocClock()
	a := newSlotAllocator(clk.Now)
	for i := range maxScheduledHosts {
		a.allocate(fmt.Sprintf("h%d", i), "", 1, time.Second, 0)
	}
	clk.Advance(scheduleIdle / 2)
	a.allocate("recent", "", 1, time.Second, 0)
	clk.Advance(scheduleIdle/2 + time.Second)
	a.allocate("new", "", 1, time.Second, 0)
	if got := a.scheduled(); got != 2 {
		t.Fatalf("%d hosts scheduled after eviction, want 2 (recent, new)", got)
	}
	if _, ok := a.hosts["recent"]; !ok {
		t.Fatal("the recently used host was evicted")
	}
}

// TestSlotAllocatorHardBound: with no host idle the table stops at
// maxScheduledHostsHard: a request for another host waits
// (newHostRetry), the hosts in it are served, and once hosts are idle a
// scan frees room; a full table is scanned at most once every
// evictEvery.
func TestSlotAllocatorHardBound(t *testing.T) {
	clk := newAllocClock()
	a := newSlotAllocator(clk.Now)
	for i := range maxScheduledHostsHard {
		a.allocate(fmt.Sprintf("h%d", i), "", 1, time.Second, 0)
	}
	if g := a.allocate("one-more", "", 1, time.Second, 0); len(g.Delays) != 0 || g.RetryAfter != newHostRetry {
		t.Fatalf("a new host past the bound: %+v, want to wait %v", g, newHostRetry)
	}
	if g := a.allocate("h7", "", 1, time.Second, 0); len(g.Delays) != 1 {
		t.Fatalf("a host in the table: %+v, want a slot", g)
	}
	if got := a.scheduled(); got != maxScheduledHostsHard {
		t.Fatalf("%d hosts scheduled, want %d", got, maxScheduledHostsHard)
	}
	clk.Advance(scheduleIdle + 2*time.Second)
	if g := a.allocate("one-more", "", 1, time.Second, 0); len(g.Delays) != 1 {
		t.Fatalf("a new host once the others are idle: %+v", g)
	}
	if got := a.scheduled(); got != 1 {
		t.Fatalf("%d hosts after the scan, want 1 (the others idle)", got)
	}
}

// TestSlotAllocatorFairShare: a requester that asks again and again for
// all it can get holds at most its share of a host's schedule, so another
// node that asks at the same pace gets about as many slots, and the
// host's spacing holds for both together.
func TestSlotAllocatorFairShare(t *testing.T) {
	clk := newAllocClock()
	a := newSlotAllocator(clk.Now)
	const iv = time.Second // 31 ticks within the 30 s horizon
	var all []time.Time
	got := map[string]int{}
	ask := func(who string) {
		g := a.allocate("h", who, maxLeaseSlots, iv, 0)
		for _, d := range g.Delays {
			all = append(all, clk.Now().Add(d))
		}
		got[who] += len(g.Delays)
		if len(g.Delays) == 0 && g.RetryAfter <= 0 {
			t.Fatalf("%s: no slot and no retry time", who)
		}
	}
	ask("greedy")
	if got["greedy"] != 15 {
		t.Fatalf("a lone requester got %d of 31 ticks, want 15 (half, room for the next)", got["greedy"])
	}
	ask("polite")
	if got["polite"] != 10 {
		t.Fatalf("the second requester got %d slots at once, want 10 (a third of 31)", got["polite"])
	}
	// Both keep asking every second for two minutes, the greedy one first.
	for range 120 {
		clk.Advance(time.Second)
		ask("greedy")
		ask("polite")
	}
	if g, p := got["greedy"], got["polite"]; p < g*8/10 {
		t.Fatalf("over 2 minutes greedy got %d slots, polite %d: not a fair share", g, p)
	}
	slices.SortFunc(all, time.Time.Compare)
	for i := 1; i < len(all); i++ {
		if d := all[i].Sub(all[i-1]); d < iv {
			t.Fatalf("slots %v and %v are %s apart, under the interval", all[i-1], all[i], d)
		}
	}
}
