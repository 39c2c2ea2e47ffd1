package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// A forming ring's crawl day, modelled: issue 17's "exactly one fetch per
// URL and day while nodes join", with the real ring and claim code. The
// crawler is reduced to what decides who fetches: a per-node FIFO with a
// URL-seen set for the day, the fetch-time check the node makes
// (node/dayclaim/relocate.go: a local virtual server owns the URL by this node's
// view, then the claims decide; else the ring is asked, and a URL another
// node owns is passed on to it), and links delivered to their owners by
// lookup. Claims travel as function calls between the nodes' claim.Claims.

// FetchConfig describes one modelled crawl day. Zero values mean the
// defaults.
type FetchConfig struct {
	// Nodes is the number of real nodes (default 6). The first founds the
	// ring and is seeded; the others join through it at random rounds.
	Nodes int
	// Vnodes is the number of virtual servers per node (default 4).
	Vnodes int
	// SameIP puts every node at one IP, as on one machine: the nodes pick
	// their indexes (ring.Config.ChooseIndexes) among the same ids, and
	// twins happen.
	SameIP bool
	// Pages is the size of the model web (default 400), each page linking
	// to Links others (default 4).
	Pages, Links int
	// JoinRounds spreads the joins over this many rounds (default 12).
	JoinRounds int
	// FetchesPerRound is how many queue entries a node handles per round
	// (default 3).
	FetchesPerRound int
	// NoClaims is the baseline without claims: joins record no former
	// owner, so nodes fetch what their view says they own.
	NoClaims bool
	// Seed makes the run reproducible.
	Seed uint64
}

// FetchResult is what a modelled day did.
type FetchResult struct {
	Pages  int // pages of the web (all reachable from the seed)
	Twice  int // pages fetched more than once
	Never  int // pages fetched by nobody
	Rounds int
	Claims claim.Stats // summed over the nodes
}

// fetcher is one modelled node.
type fetcher struct {
	r      *ring.Ring
	claims *claim.Claims
	queue  []string
	seen   map[string]bool
}

// fetchDay is the day number the model crawls.
const fetchDay = 1

// RunFetch models one crawl day on a ring that forms while it crawls.
func RunFetch(ctx context.Context, cfg FetchConfig) (FetchResult, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 6
	}
	if cfg.Vnodes == 0 {
		cfg.Vnodes = 4
	}
	if cfg.Pages == 0 {
		cfg.Pages = 400
	}
	if cfg.Links == 0 {
		cfg.Links = 4
	}
	if cfg.JoinRounds == 0 {
		cfg.JoinRounds = 12
	}
	if cfg.FetchesPerRound == 0 {
		cfg.FetchesPerRound = 3
	}
	s := New(Config{Nodes: cfg.Nodes, Vnodes: cfg.Vnodes, Seed: cfg.Seed})
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xfe7c))
	m := &fetchModel{s: s, byPeer: map[string]*fetcher{}, fetched: map[string]int{}}
	page := func(i int) string { return fmt.Sprintf("http://site.example/p/%d", i) }
	m.links = make(map[string][]string, cfg.Pages)
	for i := range cfg.Pages {
		// Page i links to the next page (so every page is reachable) and
		// to Links-1 random ones.
		out := []string{page((i + 1) % cfg.Pages)}
		for range cfg.Links - 1 {
			out = append(out, page(rng.IntN(cfg.Pages)))
		}
		m.links[page(i)] = out
	}
	joinAt := make([]int, cfg.Nodes)
	for i := 1; i < cfg.Nodes; i++ {
		joinAt[i] = 1 + rng.IntN(cfg.JoinRounds)
	}
	add := func(i int) (*fetcher, error) {
		c := Contact(i)
		if cfg.SameIP {
			c.Addr = fmt.Sprintf("10.0.0.1:%d", 4001+i)
		}
		f := &fetcher{seen: map[string]bool{}}
		r, err := ring.New(ring.Config{Self: c, VirtualServers: cfg.Vnodes, Clock: s.Clock,
			ChooseIndexes: cfg.SameIP,
			Took: func(v, former ring.Node) {
				if !cfg.NoClaims {
					f.claims.Took(v.ID, former, fetchDay)
				}
			},
		}, s.Net.Transport(c))
		if err != nil {
			return nil, fmt.Errorf("sim fetch: %w", err)
		}
		f.r = r
		f.claims = claim.New(claim.Config{Peer: c.Peer, Ring: r, Transport: simClaims{m}, Attempts: 1})
		s.nodes = append(s.nodes, &node{r: r})
		m.byPeer[c.Peer] = f
		m.order = append(m.order, f)
		return f, nil
	}
	founder, err := add(0)
	if err != nil {
		return FetchResult{}, err
	}
	founder.add(page(0))
	joined := 1
	var res FetchResult
	for round := 0; ; round++ {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		for i := 1; i < cfg.Nodes; i++ {
			if joinAt[i] != round {
				continue
			}
			f, err := add(i)
			if err != nil {
				return res, err
			}
			if err := f.r.Join(ctx, founder.r.Self()); err != nil {
				return res, fmt.Errorf("sim fetch: node %d joins: %w", i, err)
			}
			joined++
		}
		order := append([]*fetcher(nil), m.order...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		busy := false
		for _, f := range order {
			for range cfg.FetchesPerRound {
				if len(f.queue) == 0 {
					break
				}
				u := f.queue[0]
				f.queue = f.queue[1:]
				m.handle(ctx, f, u)
				busy = true
			}
		}
		s.Round(ctx)
		res.Rounds = round + 1
		if !busy && joined == cfg.Nodes && m.idle() {
			break
		}
		if round > 100_000 {
			return res, errors.New("sim fetch: the crawl does not end")
		}
	}
	res.Pages = cfg.Pages
	for i := range cfg.Pages {
		switch c := m.fetched[page(i)]; {
		case c == 0:
			res.Never++
		case c > 1:
			res.Twice++
		}
	}
	for _, f := range m.order {
		st := f.claims.Stats()
		res.Claims.Sent += st.Sent
		res.Claims.Taken += st.Taken
		res.Claims.Away += st.Away
		res.Claims.Elsewhere += st.Elsewhere
		res.Claims.Unanswered += st.Unanswered
	}
	return res, nil
}

// fetchModel is the modelled web and nodes.
type fetchModel struct {
	s       *Sim
	links   map[string][]string
	byPeer  map[string]*fetcher
	order   []*fetcher
	fetched map[string]int // fetches per URL at the site
}

func (m *fetchModel) idle() bool {
	for _, f := range m.order {
		if len(f.queue) > 0 {
			return false
		}
	}
	return true
}

// add queues u unless it was seen today (the crawler's Add).
func (f *fetcher) add(u string) {
	if !f.seen[u] {
		f.seen[u] = true
		f.queue = append(f.queue, u)
	}
}

// handle is the fetch-time check and fetch of one queue entry.
func (m *fetchModel) handle(ctx context.Context, f *fetcher, u string) {
	key := id.OfString(u)
	self := f.r.Self().Peer
	var out claim.Outcome
	var via ring.Node // the former owner that answered "elsewhere"
	if v, ok := f.r.OwnerVnode(key); ok {
		out, via = f.claims.ToFetchVia(ctx, u, key, v, fetchDay)
	} else {
		owner, ok := f.r.CloserOwner(key)
		if !ok {
			var err error
			if owner, err = f.r.Lookup(ctx, key); err != nil {
				owner = ring.Node{Contact: f.r.Self()} // fetched here rather than lost
			}
		}
		if owner.Peer == self {
			out, via = f.claims.ToFetchVia(ctx, u, key, owner, fetchDay)
		} else {
			out = claim.PassOn
		}
	}
	switch out {
	case claim.Drop:
		return
	case claim.PassOn:
		if f.claims.Dropped(key, fetchDay) {
			return
		}
		if through := m.byPeer[via.Peer]; through != nil {
			m.deliver(ctx, through, u) // as the node passes it on through via
			return
		}
		m.deliver(ctx, f, u)
		return
	}
	m.fetched[u]++
	for _, l := range m.links[u] {
		m.deliver(ctx, f, l)
	}
}

// deliver hands u to its owner by a lookup from f (the forwarder).
func (m *fetchModel) deliver(ctx context.Context, f *fetcher, u string) {
	owner, err := f.r.Lookup(ctx, id.OfString(u))
	to := f
	if err == nil {
		if o := m.byPeer[owner.Peer]; o != nil {
			to = o
		}
	}
	to.add(u)
}

// simClaims carries claims between the modelled nodes.
type simClaims struct{ m *fetchModel }

func (t simClaims) Claim(ctx context.Context, former ring.Node, q claim.Request) (claim.Reply, error) {
	f := t.m.byPeer[former.Peer]
	if f == nil || !t.m.s.Net.Alive(former.Addr) {
		return claim.Reply{}, fmt.Errorf("sim claim: %s is gone", former)
	}
	from := t.m.byPeer[q.Vnode.Peer]
	if from == nil {
		return claim.Reply{}, fmt.Errorf("sim claim: unknown claimer %s", q.Vnode)
	}
	return f.claims.Answer(ctx, ring.Node{Contact: from.r.Self()}, q, fetchDay)
}

func (t simClaims) Alive(_ context.Context, v ring.Node) bool {
	f := t.m.byPeer[v.Peer]
	return f != nil && t.m.s.Net.Alive(f.r.Self().Addr)
}
