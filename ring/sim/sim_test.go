package sim

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"runtime/debug"
	"testing"
)

var full = flag.Bool("sim", false, "run the full-scale ring simulation (minutes) and print its table")

// TestSim runs the simulator: SmallScale by default (seconds), FullScale
// with -sim. It checks the targets at either scale.
func TestSim(t *testing.T) {
	sc := SmallScale
	cfg := Config{}
	if *full {
		sc = FullScale
		debug.SetGCPercent(400)
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	rep, err := Run(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Markdown())
	for _, h := range rep.Hops {
		if h.Stats.MeanHops > h.Target || h.Stats.Success() != 1 {
			t.Errorf("%d vnodes: mean hops %.2f (target %.2f), success %.4f", h.Size.Vnodes, h.Stats.MeanHops, h.Target, h.Stats.Success())
		}
	}
	for _, b := range rep.Balance {
		if b.Vnodes == 16 && b.Chosen && b.Max > 2 {
			t.Errorf("max/mean %.2f at 16 chosen vnodes per node", b.Max)
		}
	}
	if rep.AfterStabilize.Success() != 1 {
		t.Errorf("after half crash and stabilization: %.4f correct", rep.AfterStabilize.Success())
	}
	if rep.PartitionRounds > 40 || rep.HealRounds > 40 || rep.StabilizeRounds > 40 {
		t.Errorf("slow repair: %d rounds to split, %d to heal, %d after the half crash",
			rep.PartitionRounds, rep.HealRounds, rep.StabilizeRounds)
	}
	for _, c := range rep.Churn {
		if c.Lookups.Success() < 0.99 {
			t.Errorf("churn %.2f: lookup success %.4f < 0.99", c.Rate, c.Lookups.Success())
		}
	}
}
