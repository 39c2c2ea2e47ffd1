package rank

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/herod-archive/herod/ring"
)

// Defaults of Options' zero fields.
const (
	DefaultDamping    = 0.85
	DefaultIterations = 100
	DefaultTolerance  = 1e-9
)

// Options are a run's parameters; zero fields mean the defaults.
type Options struct {
	Day     int64   // crawl day whose pages' newest versions give the links
	Damping float64 // DefaultDamping
	// Iterations bounds the power iterations (DefaultIterations); the
	// run stops earlier once the L1 change of the ranks between two
	// iterations falls below Tolerance (DefaultTolerance; negative: run
	// all Iterations).
	Iterations int
	Tolerance  float64
}

// Summary reports a finished run.
type Summary struct {
	Run        string  `json:"run"`
	Day        int64   `json:"day"`
	Members    int     `json:"members"`
	Vertices   int64   `json:"vertices"`
	Edges      int64   `json:"edges"`
	Iterations int     `json:"iterations"`
	Delta      float64 `json:"delta"` // L1 change of the last iteration
	Sum        float64 `json:"sum"`   // of all ranks: 1 but for rounding
	// PerIteration is the wall time of one iteration (a step: applying
	// the last contributions and sending the next), averaged.
	PerIteration time.Duration `json:"perIteration"`
	// StepBytes is what the members sent each other in all steps
	// (contributions, with their headers); PerEdge divides it by edges
	// and iterations.
	StepBytes     int64         `json:"stepBytes"`
	RegisterBytes int64         `json:"registerBytes"`
	PerEdge       float64       `json:"bytesPerEdge"`
	Took          time.Duration `json:"took"`
}

// Coordinator drives a run over members through Transport (the
// coordinator is usually a member too).
type Coordinator struct {
	Transport Transport
}

// Run runs PageRank over members, the ring's real nodes (each once),
// and returns its summary. Every member stores its ranks (Engine.Store).
func (c *Coordinator) Run(ctx context.Context, members []ring.Contact, o Options) (Summary, error) {
	if o.Damping <= 0 || o.Damping >= 1 {
		o.Damping = DefaultDamping
	}
	if o.Iterations <= 0 {
		o.Iterations = DefaultIterations
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	s := Summary{Run: hex.EncodeToString(rb[:]), Day: o.Day, Members: len(members)}
	start := time.Now()
	h := Header{Run: s.Run, Day: o.Day, Damping: o.Damping}
	all := func(op string, h Header) ([]Reply, error) {
		h.Op = op
		reps := make([]Reply, len(members))
		eg, gctx := errgroup.WithContext(ctx)
		for i, m := range members {
			eg.Go(func() error {
				rep, _, err := c.Transport.Call(gctx, m, h, nil)
				if err != nil {
					return fmt.Errorf("rank %s at %s: %w", op, m.Addr, err)
				}
				reps[i] = rep
				return nil
			})
		}
		return reps, eg.Wait()
	}
	reps, err := all(OpPrepare, h)
	if err != nil {
		return s, err
	}
	for _, r := range reps {
		s.Edges += r.Edges
		s.RegisterBytes += r.Bytes
	}
	if reps, err = all(OpCount, h); err != nil {
		return s, err
	}
	for _, r := range reps {
		s.Vertices += r.Vertices
	}
	if s.Vertices == 0 {
		return s, fmt.Errorf("rank: no pages on day %d", o.Day)
	}
	h.N = s.Vertices
	iterStart := time.Now()
	var dangle float64
	k := 0
	for ; k < o.Iterations; k++ {
		h.Step, h.Dangle = k, dangle
		if reps, err = all(OpStep, h); err != nil {
			return s, err
		}
		dangle, s.Delta = 0, 0
		for _, r := range reps {
			dangle += r.Dangle
			s.Delta += r.Delta
			s.StepBytes += r.Bytes
		}
		if k > 0 && s.Delta < o.Tolerance {
			k++
			break
		}
	}
	s.Iterations = k
	s.PerIteration = time.Since(iterStart) / time.Duration(max(k, 1))
	h.Step, h.Dangle = k, dangle
	if reps, err = all(OpFinish, h); err != nil {
		return s, err
	}
	s.Delta = 0
	for _, r := range reps {
		s.Sum += r.Sum
		s.Delta += r.Delta
	}
	if s.Edges > 0 {
		s.PerEdge = float64(s.StepBytes) / float64(s.Edges) / float64(k)
	}
	s.Took = time.Since(start)
	return s, nil
}
