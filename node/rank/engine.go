package rank

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Transport carries one request of the protocol to another member and
// returns its reply; the node's runs over libp2p streams (Client), the
// tests' calls an Engine in memory.
type Transport interface {
	Call(ctx context.Context, to ring.Contact, h Header, body []byte) (Reply, []byte, error)
}

// Locate returns the owner of key (ring.Ring.Lookup).
type Locate func(ctx context.Context, key id.ID) (ring.Node, error)

// Graph returns the out-links of the pages this node owns, as of the
// end of crawl day day, by source URL; once the pages it has read cost
// more than maxBytes (PageBytes) it stops and returns an error wrapping
// ErrTooLarge.
type Graph func(ctx context.Context, day int64, maxBytes int64) (map[string][]string, error)

// ErrTooLarge reports a run that would hold more than an Engine's
// MaxBytes here: this node's graph, or the vertices other members
// registered.
var ErrTooLarge = errors.New("rank: run too large for this node")

// ErrBusy reports a prepare refused while another runs, or sooner after
// the last one another member asked for than PrepareGap.
var ErrBusy = errors.New("rank: busy")

// Defaults of an Engine's bounds.
const (
	// DefaultMaxBytes: a node whose run holds more (pages' and
	// vertices' URLs with their per-item costs, PageBytes) refuses it;
	// the heap a run takes is about three times this (docs/links.md).
	DefaultMaxBytes = 64 << 20
	// DefaultPrepareGap: another member may have this node read its
	// graph once in this time.
	DefaultPrepareGap = 10 * time.Minute
)

// Per-item costs that PageBytes and a run's vertices count besides the
// URLs' bytes: a page (its map entry and slice), a link (its string), a
// vertex (its index entry, URL, ranks and out-link slice).
const (
	pageCost   = 96
	linkCost   = 16
	vertexCost = 120
)

// PageBytes returns what a page with its out-links counts against an
// Engine's MaxBytes (Graph's maxBytes).
func PageBytes(url string, links []string) int64 {
	n := int64(pageCost + len(url) + linkCost*len(links))
	for _, l := range links {
		n += int64(len(l))
	}
	return n
}

// Engine is one member's part of a rank run: the vertices it holds,
// their out-links and ranks. Self, Graph, Locate and Transport must be
// set; Store, when set, receives the ranks a run finishes with.
type Engine struct {
	Self      ring.Contact
	Graph     Graph
	Locate    Locate
	Transport Transport
	Store     *Store
	Logger    *slog.Logger
	// MaxBytes bounds what a run holds here (PageBytes of this node's
	// pages, and each vertex registered: its URL and vertexCost); past
	// it the run fails with ErrTooLarge. 0: DefaultMaxBytes.
	MaxBytes int64
	// PrepareGap is the least time between the starts of two prepares
	// other members ask for (HandleRemote): each reads every page this
	// node owns. 0: DefaultPrepareGap; negative: none.
	PrepareGap time.Duration

	preparing sync.Mutex // held by the prepare under way: one at a time

	mu          sync.Mutex
	run         *runState
	lastPrepare map[string]time.Time // by member: the start of its last prepare here (HandleRemote)
}

func (e *Engine) maxBytes() int64 {
	if e.MaxBytes > 0 {
		return e.MaxBytes
	}
	return DefaultMaxBytes
}

// edge is an out-link: the member holding the target and its index
// there (after prepare, its slot: the place of that index in the
// run's slots of the member).
type edge struct {
	peer int
	idx  uint32
}

type runState struct {
	id      string
	day     int64
	damping float64
	index   map[string]uint32
	urls    []string
	bytes   int64  // held: this node's graph and its vertices (MaxBytes)
	coord   string // the member whose prepare began the run: only it drives the run
	lastUse time.Time
	done    bool     // finished
	out     [][]edge // of the local vertices that are sources here; idx is a slot
	peers   []ring.Contact
	slots   [][]uint32 // per member, the indices there this node links to, ascending
	sealed  bool
	n       int64
	rank    []float64
	acc     [2][]float64
	step    int // last step started
}

func (e *Engine) log() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}

// errRun reports a request for another run than the one in progress.
var errRun = errors.New("rank: unknown run")

// runIdle is how long a run no request touched may be replaced by
// another member's; one under way may not.
const runIdle = 2 * time.Minute

// HandleRemote serves one request member from (a peer id the transport
// authenticated) sent: Handle, but a member's prepare comes at most once
// every PrepareGap.
func (e *Engine) HandleRemote(ctx context.Context, from string, h Header, body []byte) (Reply, []byte, error) {
	if h.Op == OpPrepare {
		gap := e.PrepareGap
		if gap == 0 {
			gap = DefaultPrepareGap
		}
		e.mu.Lock()
		now := time.Now()
		last, ok := e.lastPrepare[from]
		if gap > 0 && ok && now.Sub(last) < gap {
			e.mu.Unlock()
			return Reply{}, nil, fmt.Errorf("%w: %s's last prepare ran at %s; its next may run from %s",
				ErrBusy, from, last.UTC().Format(time.RFC3339), last.Add(gap).UTC().Format(time.RFC3339))
		}
		if e.lastPrepare == nil {
			e.lastPrepare = map[string]time.Time{}
		}
		for p, t := range e.lastPrepare {
			if now.Sub(t) >= gap {
				delete(e.lastPrepare, p) // members' entries live one gap
			}
		}
		e.lastPrepare[from] = now
		e.mu.Unlock()
	}
	return e.handle(ctx, from, h, body)
}

// Handle serves one request of this node's own (its coordinator's).
func (e *Engine) Handle(ctx context.Context, h Header, body []byte) (Reply, []byte, error) {
	return e.handle(ctx, e.Self.Peer, h, body)
}

// handle serves one request of member from.
func (e *Engine) handle(ctx context.Context, from string, h Header, body []byte) (Reply, []byte, error) {
	switch h.Op {
	case OpPrepare:
		if !e.preparing.TryLock() {
			return Reply{}, nil, fmt.Errorf("%w: a prepare is under way", ErrBusy)
		}
		defer e.preparing.Unlock()
		if err := e.admit(h, from); err != nil {
			return Reply{}, nil, err
		}
		return e.prepare(ctx, h)
	case OpRegister:
		return e.register(h, body)
	case OpCount, OpStep, OpFinish:
		if err := e.admit(h, from); err != nil {
			return Reply{}, nil, err
		}
		if h.Op == OpCount {
			return e.count(h)
		}
		return e.step(ctx, h, h.Op == OpFinish)
	case OpContrib:
		return e.contrib(h, body)
	}
	return Reply{}, nil, fmt.Errorf("rank: op %q", h.Op)
}

// admit checks a coordinator's request (prepare, count, step, finish)
// of member from: a prepare makes its run current unless another
// member's run is under way (touched within runIdle, not finished), and
// makes from its coordinator (a run that only registrations began takes
// the prepare's day and damping); the rest must come from the run's
// coordinator.
func (e *Engine) admit(h Header, from string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	r := e.run
	if h.Op != OpPrepare {
		if r == nil || r.id != h.Run {
			return fmt.Errorf("%w %q", errRun, h.Run)
		}
		if r.coord != from {
			return fmt.Errorf("rank %s: run %s is driven by %s, not %s", h.Op, h.Run, r.coord, from)
		}
		r.lastUse = now
		return nil
	}
	if r != nil && r.id != h.Run && !r.done && now.Sub(r.lastUse) < runIdle && r.coord != from {
		return fmt.Errorf("%w: run %s of %s is under way", ErrBusy, r.id, r.coord)
	}
	if r != nil && r.id == h.Run && r.coord != "" && r.coord != from {
		return fmt.Errorf("rank prepare: run %s is driven by %s, not %s", h.Run, r.coord, from)
	}
	r = e.begin(h)
	if r.coord == "" {
		r.coord, r.day, r.damping = from, h.Day, h.Damping
	}
	r.lastUse = now
	return nil
}

// vertex returns the index of url in run r, adding it, counted
// against max: false if it is new and would take r past max.
func (r *runState) vertex(url string, max int64) (uint32, bool) {
	if i, ok := r.index[url]; ok {
		return i, true
	}
	cost := int64(vertexCost + len(url))
	if r.bytes+cost > max {
		return 0, false
	}
	r.bytes += cost
	i := uint32(len(r.urls))
	r.index[url] = i
	r.urls = append(r.urls, url)
	return i, true
}

// tooLarge is the error of a run that would pass max.
func tooLarge(r *runState, max int64) error {
	return fmt.Errorf("%w: run %s holds %d vertices in %d of its %d bytes here", ErrTooLarge, r.id, len(r.urls), r.bytes, max)
}

// current returns the run h names, which must be in progress.
func (e *Engine) current(h Header) (*runState, error) {
	if e.run == nil || e.run.id != h.Run {
		return nil, fmt.Errorf("%w %q", errRun, h.Run)
	}
	return e.run, nil
}

// begin makes h's run current (a run id seen first, or again).
func (e *Engine) begin(h Header) *runState {
	if e.run == nil || e.run.id != h.Run {
		e.run = &runState{id: h.Run, day: h.Day, damping: h.Damping, index: map[string]uint32{}}
	}
	return e.run
}

// prepare reads this node's graph and registers every target with its
// owner.
func (e *Engine) prepare(ctx context.Context, h Header) (Reply, []byte, error) {
	max := e.maxBytes()
	g, err := e.Graph(ctx, h.Day, max)
	if err != nil {
		return Reply{}, nil, fmt.Errorf("rank prepare: %w", err)
	}
	var gbytes int64
	for s, ls := range g {
		gbytes += PageBytes(s, ls)
	}
	srcs := slices.Sorted(keys(g))
	e.mu.Lock()
	r := e.begin(h)
	if r.bytes+gbytes > max {
		e.mu.Unlock()
		return Reply{}, nil, fmt.Errorf("rank prepare: %w: the graph takes %d bytes of %d", ErrTooLarge, gbytes, max-r.bytes)
	}
	// The graph is held until prepare returns; its vertices stay.
	r.bytes += gbytes
	defer func() {
		e.mu.Lock()
		r.bytes -= gbytes
		e.mu.Unlock()
	}()
	type target struct {
		key id.ID
		url string
	}
	var targets []target
	seen := map[string]bool{}
	srcIdx := make([]uint32, len(srcs))
	for i, s := range srcs {
		var ok bool
		if srcIdx[i], ok = r.vertex(s, max); !ok {
			err := tooLarge(r, max)
			e.mu.Unlock()
			return Reply{}, nil, fmt.Errorf("rank prepare: %w", err)
		}
		for _, t := range g[s] {
			if t != s && !seen[t] {
				seen[t] = true
				targets = append(targets, target{id.OfString(t), t})
			}
		}
	}
	e.mu.Unlock()
	slices.SortFunc(targets, func(a, b target) int { return a.key.Cmp(b.key) })

	// Group the targets by owner: one lookup per run of keys one owner holds.
	type group struct {
		to   ring.Contact
		urls []string
	}
	var groups []*group
	byPeer := map[string]*group{}
	for i := 0; i < len(targets); {
		o, err := e.Locate(ctx, targets[i].key)
		if err != nil {
			return Reply{}, nil, fmt.Errorf("rank prepare: %w", err)
		}
		j := i + 1
		for j < len(targets) && id.InHalfOpen(targets[j].key, targets[i].key, o.ID) {
			j++
		}
		g := byPeer[o.Peer]
		if g == nil {
			g = &group{to: o.Contact}
			byPeer[o.Peer] = g
			groups = append(groups, g)
		}
		for _, t := range targets[i:j] {
			g.urls = append(g.urls, t.url)
		}
		i = j
	}
	where := map[string]edge{} // target url → holder and index
	var sent int64
	var wmu sync.Mutex
	peerNo := map[string]int{}
	var peers []ring.Contact
	for _, g := range groups {
		peerNo[g.to.Peer] = len(peers)
		peers = append(peers, g.to)
	}
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for _, g := range groups {
		eg.Go(func() error {
			var ix []uint32
			if g.to.Peer == e.Self.Peer {
				e.mu.Lock()
				for _, u := range g.urls {
					i, ok := r.vertex(u, max)
					if !ok {
						err := tooLarge(r, max)
						e.mu.Unlock()
						return fmt.Errorf("rank prepare: %w", err)
					}
					ix = append(ix, i)
				}
				e.mu.Unlock()
			} else {
				for start := 0; start < len(g.urls); start += MaxURLs {
					part := g.urls[start:min(len(g.urls), start+MaxURLs)]
					body := encodeURLs(part)
					rep, rb, err := e.Transport.Call(gctx, g.to, Header{Op: OpRegister, Run: h.Run, Day: h.Day, Damping: h.Damping, Count: len(part)}, body)
					if err != nil {
						return fmt.Errorf("rank register at %s: %w", g.to.Addr, err)
					}
					got, err := decodeIndices(rb, len(part))
					if err != nil || rep.Count != len(part) {
						return fmt.Errorf("rank register at %s: %v", g.to.Addr, err)
					}
					ix = append(ix, got...)
					wmu.Lock()
					sent += int64(len(body)) + headerBytes
					wmu.Unlock()
				}
			}
			wmu.Lock()
			defer wmu.Unlock()
			for k, u := range g.urls {
				where[u] = edge{peerNo[g.to.Peer], ix[k]}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return Reply{}, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run != r {
		return Reply{}, nil, fmt.Errorf("%w: replaced while preparing", errRun)
	}
	r.peers = peers
	var edges int64
	out := map[uint32][]edge{}
	for i, s := range srcs {
		var es []edge
		done := map[string]bool{}
		for _, t := range g[s] {
			if t == s || done[t] {
				continue
			}
			done[t] = true
			es = append(es, where[t])
		}
		out[srcIdx[i]] = es
		edges += int64(len(es))
	}
	// Number each member's targets densely (slots, in index order), so
	// that a step sums shares in slices, not maps.
	r.slots = make([][]uint32, len(peers))
	slot := make([]map[uint32]uint32, len(peers))
	for _, es := range out {
		for _, ed := range es {
			if slot[ed.peer] == nil {
				slot[ed.peer] = map[uint32]uint32{}
			}
			if _, ok := slot[ed.peer][ed.idx]; !ok {
				slot[ed.peer][ed.idx] = 0
				r.slots[ed.peer] = append(r.slots[ed.peer], ed.idx)
			}
		}
	}
	for p := range r.slots {
		slices.Sort(r.slots[p])
		for k, ix := range r.slots[p] {
			slot[p][ix] = uint32(k)
		}
	}
	r.out = make([][]edge, len(r.urls))
	for i, es := range out {
		for k, ed := range es {
			es[k].idx = slot[ed.peer][ed.idx]
		}
		r.out[i] = es
	}
	return Reply{Edges: edges, Bytes: sent}, nil, nil
}

// headerBytes is what a request's header frame costs, about: counted
// with the bodies in a run's bytes on the wire.
const headerBytes = 64

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// register numbers the URLs another member links to.
func (e *Engine) register(h Header, body []byte) (Reply, []byte, error) {
	urls, err := decodeURLs(body, h.Count)
	if err != nil {
		return Reply{}, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.run; r != nil && r.id != h.Run && !r.done && time.Since(r.lastUse) < runIdle {
		return Reply{}, nil, fmt.Errorf("%w: run %s of %s is under way", ErrBusy, r.id, r.coord)
	}
	r := e.begin(h)
	r.lastUse = time.Now()
	if r.sealed {
		return Reply{}, nil, fmt.Errorf("rank register: run %s already counted", h.Run)
	}
	ix := make([]uint32, len(urls))
	max := e.maxBytes()
	for i, u := range urls {
		var ok bool
		if ix[i], ok = r.vertex(u, max); !ok {
			return Reply{}, nil, fmt.Errorf("rank register: %w", tooLarge(r, max))
		}
	}
	return Reply{Count: len(ix)}, encodeIndices(ix), nil
}

// count freezes the run's vertices.
func (e *Engine) count(h Header) (Reply, []byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.current(h)
	if err != nil {
		return Reply{}, nil, err
	}
	r.sealed = true
	if len(r.out) < len(r.urls) {
		r.out = append(r.out, make([][]edge, len(r.urls)-len(r.out))...)
	}
	r.rank = make([]float64, len(r.urls))
	r.acc = [2][]float64{make([]float64, len(r.urls)), make([]float64, len(r.urls))}
	r.step = -1
	return Reply{Vertices: int64(len(r.urls))}, nil, nil
}

// step applies the contributions of step h.Step-1 (none before step 0)
// and, unless finishing, sends those of step h.Step.
func (e *Engine) step(ctx context.Context, h Header, finish bool) (Reply, []byte, error) {
	e.mu.Lock()
	r, err := e.current(h)
	if err != nil {
		e.mu.Unlock()
		return Reply{}, nil, err
	}
	if !r.sealed || h.N <= 0 || h.Step != r.step+1 {
		e.mu.Unlock()
		return Reply{}, nil, fmt.Errorf("rank step %d: out of order (last %d)", h.Step, r.step)
	}
	n := float64(h.N)
	var delta float64
	if h.Step == 0 {
		for i := range r.rank {
			r.rank[i] = 1 / n
		}
	} else {
		acc := r.acc[(h.Step-1)%2]
		for i := range r.rank {
			v := (1-r.damping)/n + r.damping*(h.Dangle/n+acc[i])
			delta += math.Abs(v - r.rank[i])
			r.rank[i] = v
			acc[i] = 0
		}
	}
	r.step = h.Step
	var dangle, sum float64
	for i, v := range r.rank {
		sum += v
		if len(r.out[i]) == 0 {
			dangle += v
		}
	}
	rep := Reply{Dangle: dangle, Delta: delta, Sum: sum}
	if finish {
		ranks := make(map[string]float64, len(r.urls))
		for i, u := range r.urls {
			ranks[u] = r.rank[i]
		}
		r.done = true
		e.mu.Unlock()
		if e.Store != nil {
			if err := e.Store.Put(ctx, r.day, h.Run, ranks); err != nil {
				return Reply{}, nil, err
			}
		}
		return rep, nil, nil
	}
	// Sum the shares per target member and index.
	agg := make([][]float64, len(r.peers))
	self := -1
	for p, c := range r.peers {
		agg[p] = make([]float64, len(r.slots[p]))
		if c.Peer == e.Self.Peer {
			self = p
		}
	}
	for i, es := range r.out {
		if len(es) == 0 {
			continue
		}
		share := r.rank[i] / float64(len(es))
		for _, ed := range es {
			agg[ed.peer][ed.idx] += share
		}
	}
	if self >= 0 {
		acc := r.acc[h.Step%2]
		for k, v := range agg[self] {
			acc[r.slots[self][k]] += v
		}
	}
	peers, slots := r.peers, r.slots
	e.mu.Unlock()

	var sent int64
	var smu sync.Mutex
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for p, m := range agg {
		if p == self || len(m) == 0 {
			continue
		}
		cs := make([]contrib, len(m))
		for k, v := range m {
			cs[k] = contrib{slots[p][k], v}
		}
		eg.Go(func() error {
			for start := 0; start < len(cs); start += MaxContribs {
				part := cs[start:min(len(cs), start+MaxContribs)]
				body := encodeContribs(part)
				if _, _, err := e.Transport.Call(gctx, peers[p], Header{Op: OpContrib, Run: h.Run, Step: h.Step, Count: len(part)}, body); err != nil {
					return fmt.Errorf("rank contrib to %s: %w", peers[p].Addr, err)
				}
				smu.Lock()
				sent += int64(len(body)) + headerBytes
				smu.Unlock()
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return Reply{}, nil, err
	}
	rep.Bytes = sent
	return rep, nil, nil
}

// contrib adds another member's shares of step h.Step.
func (e *Engine) contrib(h Header, body []byte) (Reply, []byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.current(h)
	if err != nil {
		return Reply{}, nil, err
	}
	r.lastUse = time.Now()
	if !r.sealed || h.Step < r.step || h.Step > r.step+1 {
		return Reply{}, nil, fmt.Errorf("rank contrib: step %d while at %d", h.Step, r.step)
	}
	cs, err := decodeContribs(body, h.Count, uint32(len(r.urls)))
	if err != nil {
		return Reply{}, nil, err
	}
	acc := r.acc[h.Step%2]
	for _, c := range cs {
		acc[c.idx] += c.v
	}
	return Reply{Count: len(cs)}, nil, nil
}
