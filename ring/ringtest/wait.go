package ringtest

import (
	"context"
	"fmt"
	"time"

	"github.com/herod-archive/herod/ring"
)

// WaitStable waits until rs have converged (Stable, on ProbeKeys of them),
// checking every 100 ms; when ctx ends first it returns an error with
// Stable's last answer.
func WaitStable(ctx context.Context, rs []*ring.Ring) error {
	keys := ProbeKeys(rs, 64)
	for {
		last := Stable(ctx, rs, keys)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("local ring not stable: %w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitSettled waits until a ring of nodes has nothing left to do: two
// consecutive sweeps, 150 ms apart, find every node idle and no progress
// between them. sweep reports whether every node is idle and a sum of
// their progress counters (fetches, links sent and received). When ctx
// ends first, the error holds describe's account of the nodes.
func WaitSettled(ctx context.Context, sweep func() (idle bool, progress int64), describe func() string) error {
	prev := int64(-1)
	for {
		idle, progress := sweep()
		if idle && progress == prev {
			return nil
		}
		if idle {
			prev = progress
		} else {
			prev = -1
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("local ring not idle: %w%s", ctx.Err(), describe())
		case <-time.After(150 * time.Millisecond):
		}
	}
}
