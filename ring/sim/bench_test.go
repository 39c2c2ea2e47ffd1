package sim

import (
	"context"
	"testing"
)

// BenchmarkLookup measures lookups on a 1,000-vnode ring (250 real nodes
// x 4) over memnet and reports hops and messages per lookup.
func BenchmarkLookup(b *testing.B) {
	ctx := context.Background()
	s := New(Config{Nodes: 250, Vnodes: 4, Seed: 1})
	if err := s.Build(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	st := s.Lookups(ctx, b.N)
	b.ReportMetric(st.MeanHops, "hops/lookup")
	b.ReportMetric(st.MeanMsgs, "msgs/lookup")
	b.ReportMetric(float64(st.P99Hops), "p99-hops")
	if st.Correct != st.Count {
		b.Fatalf("%d of %d lookups wrong", st.Count-st.Correct, st.Count)
	}
}
