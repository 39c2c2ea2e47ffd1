package sim

import (
	"context"
	"flag"
	"math"
	"testing"
)

var full = flag.Bool("sim", false, "run the full-scale ring simulation (minutes) and print its table")

func TestSimSmall(t *testing.T) {
	ctx := context.Background()
	s := New(Config{Nodes: 32, Vnodes: 4, Seed: 1})
	if err := s.Build(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.Lookups(ctx, 500)
	bound := 0.5*math.Log2(128) + 1
	if st.Correct != st.Count || st.MeanHops > bound {
		t.Fatalf("lookups %+v; want all correct, mean hops <= %.2f", st, bound)
	}
	t.Logf("128 vnodes: %+v", st)
}
