package replication

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
)

// TestPushLeftToRoundSoon: records whose offers failed twice (a replica
// that refused the owner, as one does while the ring forms and it does
// not yet see the sender as the range's owner) reach the replica by a
// round Settle after the failure, not at the next interval: an owner
// that died within the interval took them with it
// (cmd/herod TestProcessesKillAfterCrawl lost 26 URLs so, once in two
// runs). An owner and one replica on a mock network, rounds an hour
// apart.
func TestPushLeftToRoundSoon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The replica does not admit the owner's first two streams (an offer
	// and its retry), as a replica whose view of the ring lags does not.
	var streams atomic.Int32
	p := newPushPair(t, func() bool { return streams.Add(1) > 2 })
	owner, replica, rs := p.owner, p.replica, p.rs
	owner.SetInterval(time.Hour)

	done := make(chan struct{}, 3)
	go func() { owner.Push(ctx); done <- struct{}{} }()
	go func() { replica.Work(ctx); done <- struct{}{} }()
	events := make(chan ring.Event, 8)
	go func() { owner.Run(ctx, events); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done; <-done }()

	es := putInRange(ctx, t, p.os, p.rng, 6)
	testwait.For(t, "the offers failed twice", 30*time.Second, func() error {
		if st := owner.Stats().Push; st.Failed < int64(len(es)) {
			return fmt.Errorf("push %+v", st)
		}
		return nil
	})
	// Ring changes go on (the ring still forms): the round waits for
	// them to settle, and is not put off to the next interval.
	for range 3 {
		events <- ring.Event{Vnode: p.ownerV, NewRange: p.rng}
	}
	testwait.For(t, "every version on the replica, well before the next interval", 30*time.Second, func() error {
		if n, _ := holding(ctx, rs, es); n < len(es) {
			return fmt.Errorf("%d of %d; owner rounds %d, %+v", n, len(es), owner.Stats().Rounds, owner.Stats().Push)
		}
		return nil
	})
}
