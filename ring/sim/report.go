package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/herod-archive/herod/ring"
)

// Scale sets the sizes of a full simulation run.
type Scale struct {
	// Hops lists ring sizes to measure lookup hops at: total virtual
	// servers and virtual servers per real node.
	Hops []Size
	// BalanceNodes real nodes receive BalanceKeys keys for each entry of
	// BalanceVnodes virtual servers per node.
	BalanceNodes  int
	BalanceKeys   int
	BalanceVnodes []int
	// Ring is the size of the failure, churn and partition scenarios.
	Ring Size
	// Lookups per measurement.
	Lookups int
	// ChurnRounds rounds of churn at each of ChurnRates (fraction of real
	// nodes crashing, and as many joining, per round).
	ChurnRounds int
	ChurnRates  []float64
	// Loss is the message loss rate of the loss scenario (0: skipped),
	// run for ChurnRounds rounds.
	Loss float64
	Seed uint64
}

// Size is a ring size.
type Size struct{ Vnodes, PerNode int }

// FullScale is the run reported in doc.go.
var FullScale = Scale{
	Hops:          []Size{{1000, 1}, {1000, 4}, {10000, 1}, {10000, 4}},
	BalanceNodes:  1000,
	BalanceKeys:   1_000_000,
	BalanceVnodes: []int{1, 4, 16, 64},
	Ring:          Size{1000, 4},
	Lookups:       5000,
	ChurnRounds:   50,
	ChurnRates:    []float64{0.01, 0.05},
	Loss:          0.05,
	Seed:          1,
}

// SmallScale runs in a few seconds; the default test uses it.
var SmallScale = Scale{
	Hops:          []Size{{128, 1}, {128, 4}},
	BalanceNodes:  100,
	BalanceKeys:   100_000,
	BalanceVnodes: []int{1, 16},
	Ring:          Size{128, 4},
	Lookups:       500,
	ChurnRounds:   10,
	ChurnRates:    []float64{0.05},
	Loss:          0.05,
	Seed:          1,
}

// HopRow is one lookup-hops measurement.
type HopRow struct {
	Size   Size
	Stats  LookupStats
	Target float64 // ½·log2 N + 1
	Build  time.Duration
}

// ChurnRow is the result of one churn rate.
type ChurnRow struct {
	Rate    float64
	Rounds  int
	Lookups LookupStats
}

// Report is the result of Run.
type Report struct {
	Hops    []HopRow
	Balance []Balance
	// Half the real nodes crash at once.
	FailedNodes     int
	BeforeStabilize LookupStats // lookups right after the crash
	StabilizeRounds int         // rounds until one consistent ring
	AfterStabilize  LookupStats
	Churn           []ChurnRow
	// Lookups under message loss, and recovery after it stops.
	Lossy            LookupStats
	LossRate         float64
	LossRounds       int
	LossRecover      int // rounds after the loss stops until one consistent ring
	PartitionRounds  int // rounds until each half is a ring
	HealRounds       int // rounds after healing until one ring
	ScenarioRingSize Size
	TotalTime        time.Duration
}

func (s Size) nodes() int { return (s.Vnodes + s.PerNode - 1) / s.PerNode }

// Run runs every scenario of sc.
func Run(ctx context.Context, sc Scale, cfg Config) (Report, error) {
	start := time.Now()
	var rep Report
	for _, sz := range sc.Hops {
		t0 := time.Now()
		c := cfg
		c.Nodes, c.Vnodes, c.Seed = sz.nodes(), sz.PerNode, sc.Seed
		s := New(c)
		if err := s.Build(ctx); err != nil {
			return rep, err
		}
		build := time.Since(t0)
		rep.Hops = append(rep.Hops, HopRow{Size: sz, Stats: s.Lookups(ctx, sc.Lookups),
			Target: 0.5*math.Log2(float64(sz.Vnodes)) + 1, Build: build})
		s.log.Info("sim: hops", "vnodes", sz.Vnodes, "per_node", sz.PerNode, "stats", rep.Hops[len(rep.Hops)-1].Stats, "build", build)
	}
	for _, choose := range []bool{false, true} {
		for _, v := range sc.BalanceVnodes {
			rep.Balance = append(rep.Balance, LoadBalance(sc.BalanceNodes, v, ring.DefaultMaxVirtualServers, sc.BalanceKeys, choose))
		}
	}
	rep.ScenarioRingSize = sc.Ring
	newRing := func() (*Sim, error) {
		c := cfg
		c.Nodes, c.Vnodes, c.Seed = sc.Ring.nodes(), sc.Ring.PerNode, sc.Seed
		s := New(c)
		return s, s.Build(ctx)
	}

	s, err := newRing()
	if err != nil {
		return rep, err
	}
	rep.FailedNodes = s.KillFraction(0.5)
	rep.BeforeStabilize = s.Lookups(ctx, sc.Lookups)
	if rep.StabilizeRounds, err = s.Converge(ctx, 200); err != nil {
		return rep, err
	}
	rep.AfterStabilize = s.Lookups(ctx, sc.Lookups)

	for _, rate := range sc.ChurnRates {
		if s, err = newRing(); err != nil {
			return rep, err
		}
		row := ChurnRow{Rate: rate, Rounds: sc.ChurnRounds}
		if row.Lookups, err = s.Churn(ctx, sc.ChurnRounds, rate, max(1, sc.Lookups/sc.ChurnRounds)); err != nil {
			return rep, err
		}
		rep.Churn = append(rep.Churn, row)
	}

	if sc.Loss > 0 {
		if s, err = newRing(); err != nil {
			return rep, err
		}
		rep.LossRate, rep.LossRounds = sc.Loss, sc.ChurnRounds
		s.Net.SetLoss(sc.Loss)
		for range sc.ChurnRounds {
			s.Round(ctx)
			rep.Lossy.add(s.Lookups(ctx, max(1, sc.Lookups/sc.ChurnRounds)))
		}
		s.Net.SetLoss(0)
		if rep.LossRecover, err = s.Converge(ctx, 100); err != nil {
			return rep, err
		}
	}

	if s, err = newRing(); err != nil {
		return rep, err
	}
	if rep.PartitionRounds, rep.HealRounds, err = s.Partition(ctx, 500); err != nil {
		return rep, err
	}
	rep.TotalTime = time.Since(start)
	return rep, nil
}

// Markdown renders the report as the tables of doc.go.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Lookup hops (remote steps per lookup; %d random keys from random nodes):\n\n", max(1, r.Hops[0].Stats.Count))
	b.WriteString("| virtual servers | per real node | mean hops | p99 | max | target mean ≤ ½·log2 N + 1 | msgs/lookup | correct |\n|---|---|---|---|---|---|---|---|\n")
	for _, h := range r.Hops {
		fmt.Fprintf(&b, "| %d | %d | %.2f | %d | %d | %.2f | %.2f | %.2f%% |\n", h.Size.Vnodes, h.Size.PerNode,
			h.Stats.MeanHops, h.Stats.P99Hops, h.Stats.MaxHops, h.Target, h.Stats.MeanMsgs, 100*h.Stats.Success())
	}
	if len(r.Balance) > 0 {
		fmt.Fprintf(&b, "\nKeys per real node over the mean (%d real nodes, %d keys):\n\n", r.Balance[0].RealNodes, r.Balance[0].Keys)
		b.WriteString("| virtual servers per node | indexes | max/mean | p99/mean | p1/mean |\n|---|---|---|---|---|\n")
		for _, x := range r.Balance {
			how := "0..V-1"
			if x.Chosen {
				how = fmt.Sprintf("best V of %d (ChooseIndexes)", ring.DefaultMaxVirtualServers)
			}
			fmt.Fprintf(&b, "| %d | %s | %.2f | %.2f | %.2f |\n", x.Vnodes, how, x.Max, x.P99, x.P1)
		}
	}
	z := r.ScenarioRingSize
	fmt.Fprintf(&b, "\nFailures, churn, partition (%d virtual servers, %d per real node):\n\n", z.Vnodes, z.PerNode)
	b.WriteString("| scenario | result |\n|---|---|\n")
	fmt.Fprintf(&b, "| %d of %d real nodes crash at once: correct live owner, before any stabilization | %.2f%% (%d failed) |\n",
		r.FailedNodes, z.nodes(), 100*r.BeforeStabilize.Success(), r.BeforeStabilize.Failed)
	fmt.Fprintf(&b, "| same, rounds until one consistent ring | %d |\n", r.StabilizeRounds)
	fmt.Fprintf(&b, "| same, correct live owner after stabilization | %.2f%% |\n", 100*r.AfterStabilize.Success())
	for _, c := range r.Churn {
		fmt.Fprintf(&b, "| churn: %.0f%% of real nodes crash and as many join every round, %d rounds: lookup success | %.2f%% (%d lookups, %d failed) |\n",
			100*c.Rate, c.Rounds, 100*c.Lookups.Success(), c.Lookups.Count, c.Lookups.Failed)
	}
	if r.LossRate > 0 {
		fmt.Fprintf(&b, "| %.0f%% of messages lost, %d rounds: lookup success | %.2f%% (%d lookups, %d failed) |\n",
			100*r.LossRate, r.LossRounds, 100*r.Lossy.Success(), r.Lossy.Count, r.Lossy.Failed)
		fmt.Fprintf(&b, "| same, rounds after the loss stops until one consistent ring | %d |\n", r.LossRecover)
	}
	fmt.Fprintf(&b, "| partition into two halves: rounds until each half is a ring | %d |\n", r.PartitionRounds)
	fmt.Fprintf(&b, "| partition healed: rounds until one consistent ring | %d |\n", r.HealRounds)
	fmt.Fprintf(&b, "\nTotal run time %v.\n", r.TotalTime.Round(time.Second))
	return b.String()
}
