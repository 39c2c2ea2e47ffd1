package ring_test

import (
	"context"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// drain returns the events buffered in s.
func drain(s *ring.Subscription) []ring.Event {
	var out []ring.Event
	for {
		select {
		case e := <-s.C:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestEventsOnJoinAndCrash(t *testing.T) {
	c := newCluster(t, 4, 2)
	c.joinAll()
	waitConsistent(t, c, 20)
	watched := c.rings[0]
	sub := watched.Subscribe(1024)
	defer sub.Unsubscribe()

	// A node joins: some of watched's vnodes lose part of their range to
	// it (the new predecessor is a new vnode), or gain successors.
	newcomer := c.add(contactOf(10))
	if err := newcomer.Join(context.Background(), c.rings[0].Self()); err != nil {
		t.Fatal(err)
	}
	waitConsistent(t, c, 20)
	evs := drain(sub)
	if len(evs) == 0 {
		t.Fatal("no events after a join")
	}
	checkEventsMatchStatus(t, watched, evs)

	// The newcomer crashes: watched's state returns and events say so.
	c.kill(len(c.rings) - 1)
	waitConsistent(t, c, 20)
	evs = drain(sub)
	gone := newcomer.Self().Peer
	has := func(ns []ring.Node) bool {
		for _, n := range ns {
			if n.Peer == gone {
				return true
			}
		}
		return false
	}
	lost := false
	for _, e := range evs {
		lost = lost || e.Kind == ring.SuccessorsChanged && has(e.OldSuccessors) && !has(e.NewSuccessors)
	}
	if !lost {
		t.Fatalf("no event removed the crashed node from a successor list (%d events)", len(evs))
	}
	checkEventsMatchStatus(t, watched, evs)
	if sub.Dropped() != 0 {
		t.Fatalf("%d events dropped", sub.Dropped())
	}
}

// checkEventsMatchStatus: replaying the events gives the current state,
// and each event's old state is the previous event's new state.
func checkEventsMatchStatus(t *testing.T, r *ring.Ring, evs []ring.Event) {
	t.Helper()
	lastRange := map[id.ID]ring.Range{}
	lastSuccs := map[id.ID][]ring.Node{}
	for _, e := range evs {
		switch e.Kind {
		case ring.RangeChanged:
			if prev, ok := lastRange[e.Vnode.ID]; ok && prev != e.OldRange {
				t.Fatalf("%s: event old range %+v, previous new range %+v", e.Vnode, e.OldRange, prev)
			}
			if e.OldRange == e.NewRange {
				t.Fatalf("%s: range event without a change", e.Vnode)
			}
			lastRange[e.Vnode.ID] = e.NewRange
		case ring.SuccessorsChanged:
			if prev, ok := lastSuccs[e.Vnode.ID]; ok && !sameNodes(prev, e.OldSuccessors) {
				t.Fatalf("%s: event old successors differ from previous new", e.Vnode)
			}
			lastSuccs[e.Vnode.ID] = e.NewSuccessors
		default:
			t.Fatalf("unknown event kind %v", e.Kind)
		}
	}
	for _, v := range r.Status().Vnodes {
		if g, ok := lastRange[v.ID]; ok && g != v.Range {
			t.Fatalf("%s: last event range %+v, status %+v", v.Node, g, v.Range)
		}
		if s, ok := lastSuccs[v.ID]; ok && !sameNodes(s, v.Successors) {
			t.Fatalf("%s: last event successors differ from status", v.Node)
		}
	}
}

func sameNodes(a, b []ring.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSubscriptionDropsOldest(t *testing.T) {
	c := newCluster(t, 3, 4)
	sub := c.rings[0].Subscribe(1)
	c.joinAll()
	waitConsistent(t, c, 20)
	evs := drain(sub)
	if len(evs) != 1 || sub.Dropped() == 0 {
		t.Fatalf("got %d events, %d dropped; want 1 and some", len(evs), sub.Dropped())
	}
	checkEventsMatchStatus(t, c.rings[0], nil)
	sub.Unsubscribe()
	if _, ok := <-sub.C; ok {
		t.Fatal("channel open after Unsubscribe")
	}
	c.rings[0].Close()
	if _, ok := <-c.rings[0].Subscribe(4).C; ok {
		t.Fatal("subscription after Close is open")
	}
}
