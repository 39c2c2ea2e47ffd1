package replication

import (
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// TestRangeHealth follows two ranges over three rounds: one falls behind
// and catches up, the other lacks a replica throughout.
func TestRangeHealth(t *testing.T) {
	a, b := id.OfString("a"), id.OfString("b")
	t0 := time.Unix(1000, 0)
	var h rangeHealth
	check := func(c rangeCheck, pairs ...pairCheck) rangeCheck {
		c.inSync = true
		for _, p := range pairs {
			c.add(p)
		}
		return c
	}
	type want struct {
		behind int
		belowK int64
		lag    float64
	}
	for i, step := range []struct {
		checks map[id.ID]rangeCheck
		at     time.Duration
		want   want
	}{
		{map[id.ID]rangeCheck{
			a: check(rangeCheck{replicas: 2, want: 2}, pairCheck{inSync: true}, pairCheck{inSync: true}),
			b: check(rangeCheck{replicas: 1, want: 2, belowK: 40}, pairCheck{inSync: true}),
		}, 0, want{1, 40, 0}},
		{map[id.ID]rangeCheck{
			a: check(rangeCheck{replicas: 2, want: 2}, pairCheck{inSync: true}, pairCheck{lacking: 7}),
			b: check(rangeCheck{replicas: 1, want: 2, belowK: 40}, pairCheck{inSync: true}),
		}, 30 * time.Second, want{2, 47, 30}},
		{map[id.ID]rangeCheck{
			a: check(rangeCheck{replicas: 2, want: 2}, pairCheck{lacking: 3}, pairCheck{lacking: 5}),
		}, 60 * time.Second, want{1, 5, 60}}, // in sync last at round 0
		{map[id.ID]rangeCheck{
			a: check(rangeCheck{replicas: 2, want: 2}, pairCheck{inSync: true}, pairCheck{inSync: true}),
		}, 90 * time.Second, want{0, 0, 0}},
	} {
		h.update(step.checks, t0.Add(step.at))
		got := h.snapshot(t0.Add(step.at))
		if got.Behind != step.want.behind || got.BelowK != step.want.belowK || got.LagSec != step.want.lag || got.Ranges != len(step.checks) {
			t.Errorf("round %d: %+v, want %+v", i, got, step.want)
		}
	}
	// A pair whose count is unknown marks the range unknown.
	c := check(rangeCheck{replicas: 2, want: 2}, pairCheck{lacking: -1})
	if !c.unknown || c.inSync {
		t.Errorf("unknown pair: %+v", c)
	}
}
