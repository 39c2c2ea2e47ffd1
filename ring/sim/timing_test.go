package sim

import (
	"context"
	"testing"
	"time"
)

func TestSimTiming(t *testing.T) {
	if !*full {
		t.Skip()
	}
	ctx := context.Background()
	t0 := time.Now()
	s := New(Config{Nodes: 2500, Vnodes: 4, Seed: 1})
	if err := s.Build(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("build %v", time.Since(t0))
	t0 = time.Now()
	st := s.Lookups(ctx, 2000)
	t.Logf("lookups %v %+v", time.Since(t0), st)
	t0 = time.Now()
	s.Round(ctx)
	t.Logf("round %v", time.Since(t0))
}
