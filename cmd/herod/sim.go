package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/herod-archive/herod/ring/sim"
)

// simCmd runs the ring simulator (package ring/sim): the real ring code
// on an in-memory network, measuring lookup hops, load balance, recovery
// from mass failure, churn, message loss and a partition, and prints its
// report as Markdown tables.
func simCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim", "sim [--scale small|full] [--seed N] [-v]", stderr)
	scale := fs.String("scale", "small", "small (seconds: 128 virtual servers) or full (minutes: up to 10,000 virtual servers, the figures of docs/ring.md)")
	seed := fs.Uint64("seed", 1, "random seed: the same seed gives the same report")
	verbose := fs.Bool("v", false, "log each step to stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	var sc sim.Scale
	switch *scale {
	case "small":
		sc = sim.SmallScale
	case "full":
		sc = sim.FullScale
	default:
		return fmt.Errorf("--scale %q: want small or full", *scale)
	}
	sc.Seed = *seed
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = newLogger(stderr, "text", true)
	}
	rep, err := sim.Run(ctx, sc, sim.Config{Logger: log})
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	_, err = io.WriteString(stdout, rep.Markdown())
	return err
}
