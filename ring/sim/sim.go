package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/memnet"
	"github.com/herod-archive/herod/ring/ringtest"
)

// Config describes a simulated ring. Zero values mean the defaults.
type Config struct {
	// Nodes is the number of real nodes (default 16).
	Nodes int
	// Vnodes is the number of virtual servers per real node (default 4).
	Vnodes int
	// SuccessorListLen is r (default ring.DefaultSuccessorListLen).
	SuccessorListLen int
	// Seed makes the run reproducible.
	Seed uint64
	// Wrap, if set, wraps each node's transport (a counter of the bytes
	// the ring's messages take on the wire: WireCounter.Wrap).
	Wrap func(ring.Transport) ring.Transport
	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
}

// Sim is a ring of real ring.Ring nodes over one memnet, driven round by
// round from one goroutine, so a run is a deterministic function of its
// Config.
type Sim struct {
	cfg   Config
	Net   *memnet.Network
	Clock *memnet.Clock
	rng   *rand.Rand
	log   *slog.Logger
	nodes []*node
	next  int // next node number for addresses
}

type node struct {
	r    *ring.Ring
	dead bool
}

// New returns an empty simulation.
func New(cfg Config) *Sim {
	if cfg.Nodes == 0 {
		cfg.Nodes = 16
	}
	if cfg.Vnodes == 0 {
		cfg.Vnodes = 4
	}
	if cfg.SuccessorListLen == 0 {
		cfg.SuccessorListLen = ring.DefaultSuccessorListLen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sim{
		cfg:   cfg,
		Net:   memnet.New(memnet.Config{Seed: cfg.Seed}),
		Clock: memnet.NewClock(time.Unix(1_700_000_000, 0)),
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		log:   cfg.Logger,
	}
}

// Contact returns the contact of real node number i: a distinct IPv4
// address per node, port 4001.
func Contact(i int) ring.Contact {
	return ring.Contact{Peer: fmt.Sprintf("sim-%06d", i), Addr: fmt.Sprintf("10.%d.%d.%d:4001", i>>16&255, i>>8&255, i&255)}
}

// add creates one more real node, not yet joined.
func (s *Sim) add() (*node, error) {
	c := Contact(s.next)
	s.next++
	var tr ring.Transport = s.Net.Transport(c)
	if s.cfg.Wrap != nil {
		tr = s.cfg.Wrap(tr)
	}
	r, err := ring.New(ring.Config{Self: c, VirtualServers: s.cfg.Vnodes, SuccessorListLen: s.cfg.SuccessorListLen,
		Clock: s.Clock}, tr)
	if err != nil {
		return nil, fmt.Errorf("sim add: %w", err)
	}
	n := &node{r: r}
	s.nodes = append(s.nodes, n)
	return n, nil
}

// Live returns the rings of live nodes.
func (s *Sim) Live() []*ring.Ring {
	var out []*ring.Ring
	for _, n := range s.nodes {
		if !n.dead {
			out = append(out, n.r)
		}
	}
	return out
}

func (s *Sim) randomLive() *ring.Ring {
	live := s.Live()
	return live[s.rng.IntN(len(live))]
}

// Round runs one maintenance round on every live node, in random order,
// then advances the clock by the stabilization interval.
func (s *Sim) Round(ctx context.Context) {
	live := s.Live()
	s.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	for _, r := range live {
		r.Maintain(ctx)
	}
	s.Clock.Advance(ring.DefaultStabilizeInterval)
}

// Converge runs rounds until the live nodes form one consistent ring and
// returns how many it took.
func (s *Sim) Converge(ctx context.Context, max int) (int, error) {
	for i := 0; ; i++ {
		err := ringtest.Consistent(s.Live())
		if err == nil {
			return i, nil
		}
		if i >= max || ctx.Err() != nil {
			return i, fmt.Errorf("sim: not consistent after %d rounds: %w", i, err)
		}
		s.Round(ctx)
	}
}

// Build creates cfg.Nodes nodes and joins them, doubling the ring each
// step and stabilizing in between, then fills every finger table.
func (s *Sim) Build(ctx context.Context) error {
	if _, err := s.add(); err != nil {
		return err
	}
	for len(s.nodes) < s.cfg.Nodes {
		batch := min(len(s.nodes), s.cfg.Nodes-len(s.nodes))
		for range batch {
			via := s.randomLive().Self()
			n, err := s.add()
			if err != nil {
				return err
			}
			if err := n.r.Join(ctx, via); err != nil {
				return fmt.Errorf("sim build: %w", err)
			}
		}
		rounds, err := s.Converge(ctx, 100)
		if err != nil {
			return fmt.Errorf("sim build at %d nodes: %w", len(s.nodes), err)
		}
		s.log.Info("sim: grown", "nodes", len(s.nodes), "rounds", rounds)
	}
	s.RefreshFingers(ctx)
	return nil
}

// RefreshFingers rebuilds every live node's finger table.
func (s *Sim) RefreshFingers(ctx context.Context) {
	for _, r := range s.Live() {
		r.RefreshFingers(ctx)
	}
}

// Kill crashes real node i (it stops answering; nobody is told).
func (s *Sim) Kill(i int) {
	s.nodes[i].dead = true
	s.Net.Kill(s.nodes[i].r.Self().Addr)
	s.nodes[i].r.Close()
}

// KillFraction crashes a random fraction f of the live nodes at once and
// returns how many died.
func (s *Sim) KillFraction(f float64) int {
	var live []int
	for i, n := range s.nodes {
		if !n.dead {
			live = append(live, i)
		}
	}
	s.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	k := int(f * float64(len(live)))
	for _, i := range live[:k] {
		s.Kill(i)
	}
	return k
}

// LookupStats summarizes a batch of lookups checked against ground truth.
type LookupStats struct {
	Count    int
	Correct  int // returned the true live owner
	Failed   int // returned an error
	MeanHops float64
	P99Hops  int
	MaxHops  int
	// MeanMsgs counts every call a lookup made: steps, timeouts, pings.
	MeanMsgs float64
}

// Success is the share of lookups that returned the correct live owner.
func (l LookupStats) Success() float64 {
	if l.Count == 0 {
		return 0
	}
	return float64(l.Correct) / float64(l.Count)
}

func (l *LookupStats) add(o LookupStats) {
	n := l.Count + o.Count
	if n == 0 {
		return
	}
	l.MeanHops = (l.MeanHops*float64(l.Count) + o.MeanHops*float64(o.Count)) / float64(n)
	l.MeanMsgs = (l.MeanMsgs*float64(l.Count) + o.MeanMsgs*float64(o.Count)) / float64(n)
	l.Count, l.Correct, l.Failed = n, l.Correct+o.Correct, l.Failed+o.Failed
	l.P99Hops, l.MaxHops = max(l.P99Hops, o.P99Hops), max(l.MaxHops, o.MaxHops)
}

// Lookups runs n lookups of random keys from random live nodes and checks
// each answer against the true owner among live vnodes.
func (s *Sim) Lookups(ctx context.Context, n int) LookupStats {
	live := s.Live()
	all := ringtest.Vnodes(live)
	var st LookupStats
	hops := make([]int, 0, n)
	var msgs int
	for range n {
		var key id.ID
		for i := range key {
			key[i] = byte(s.rng.UintN(256))
		}
		r := live[s.rng.IntN(len(live))]
		got, tr, err := r.LookupTrace(ctx, key)
		st.Count++
		hops = append(hops, tr.Hops)
		msgs += tr.Hops + tr.Timeouts + tr.Pings
		switch {
		case err != nil:
			st.Failed++
		case got == ringtest.Owner(all, key):
			st.Correct++
		}
	}
	slices.Sort(hops)
	sum := 0
	for _, h := range hops {
		sum += h
	}
	if n > 0 {
		st.MeanHops = float64(sum) / float64(n)
		st.P99Hops = hops[(len(hops)*99)/100]
		st.MaxHops = hops[len(hops)-1]
		st.MeanMsgs = float64(msgs) / float64(n)
	}
	return st
}

// Churn runs rounds in which, every round, a fraction rate of the live
// nodes crash and as many new nodes join through random live members,
// with lookupsPerRound lookups checked after each round's maintenance.
func (s *Sim) Churn(ctx context.Context, rounds int, rate float64, lookupsPerRound int) (LookupStats, error) {
	var total LookupStats
	for range rounds {
		k := max(1, int(rate*float64(len(s.Live()))))
		s.KillFraction(float64(k) / float64(len(s.Live())))
		for range k {
			via := s.randomLive().Self()
			n, err := s.add()
			if err != nil {
				return total, err
			}
			if err := n.r.Join(ctx, via); err != nil {
				// The chosen member may have just died; it is part of churn.
				s.nodes[len(s.nodes)-1].dead = true
				s.Net.Kill(n.r.Self().Addr)
				n.r.Close()
				continue
			}
		}
		s.Round(ctx)
		total.add(s.Lookups(ctx, lookupsPerRound))
	}
	return total, nil
}

// Partition splits the live nodes into two halves (alternate members),
// runs rounds until each half is a consistent ring of its own, heals, and
// runs rounds until the whole is one consistent ring. It returns both
// round counts.
func (s *Sim) Partition(ctx context.Context, max int) (split, heal int, err error) {
	var a, b []*ring.Ring
	var ga, gb []string
	for i, r := range s.Live() {
		if i%2 == 0 {
			a, ga = append(a, r), append(ga, r.Self().Addr)
		} else {
			b, gb = append(b, r), append(gb, r.Self().Addr)
		}
	}
	s.Net.Partition(ga, gb)
	for split = 0; ringtest.Consistent(a) != nil || ringtest.Consistent(b) != nil; split++ {
		if split >= max {
			return split, 0, errors.New("sim partition: halves did not form rings")
		}
		s.Round(ctx)
	}
	s.Net.Heal()
	heal, err = s.Converge(ctx, max)
	return split, heal, err
}
