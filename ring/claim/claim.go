package claim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Request claims URL on day Day for the claimer's virtual server Vnode,
// which must lie between the URL's key and the answering node's virtual
// servers.
type Request struct {
	URL   string    `json:"url"`
	Day   int64     `json:"day"`
	Vnode ring.Node `json:"vnode"`
	// To is the answering node's virtual server the claimer took the
	// range from, as the claimer recorded it.
	To   id.ID `json:"to"`
	Hops int   `json:"hops,omitempty"` // former owners asked before this one
	// Chain lists the peers that asked along the chain of former owners,
	// the claimer's first (empty when Hops is 0). A chain can come back to
	// one of them (ranges taken back and forth on one day); that node then
	// answers "yours" without recording a grant: the URL belongs to the
	// claim that passed through it, and a grant would make it drop it.
	Chain []string `json:"chain,omitempty"`
}

// Reply answers a Request.
type Reply struct {
	// Taken: the URL was fetched today by the answering node or one
	// before it, or granted to another claimer; the claimer drops it.
	Taken bool `json:"taken,omitempty"`
	// Elsewhere: by the answering node's view the URL's owner is not the
	// claimer — one of the answering node's virtual servers lies between
	// the URL's key and the claimer's. The claimer's view is behind; it
	// passes the URL on instead of fetching it.
	Elsewhere bool `json:"elsewhere,omitempty"`
	// Next, with neither Taken nor Elsewhere: the chain of former owners
	// was cut at MaxHops and goes on at Next, which the claimer asks in
	// turn (with Chain, the peers asked so far). The nodes that answered
	// have granted the URL; if Next says "taken", nobody else fetches it.
	Next  *ring.Node `json:"next,omitempty"`
	Chain []string   `json:"chain,omitempty"`
	// Retry, with neither Taken nor Elsewhere: a former owner further
	// along the chain refused the claim for now (ErrRefused), so the
	// answering node granted nothing; the claimer asks again later.
	Retry bool   `json:"retry,omitempty"`
	Err   string `json:"err,omitempty"`
}

// ErrRole reports a claim or handover its sender had no right to make: a
// virtual server not its own, or not a valid id.
var ErrRole = errors.New("claim: outside the sender's role")

// ErrRefused, wrapped in an error of Transport.Claim, reports a former
// owner that is there but did not answer: it reset the stream, as a
// node's trust gate does while it cannot yet place the claimer in the
// ring (a ring that is forming, a twin about to move), or its handler ran
// out of time. A refused claim is asked again up to
// Config.RefusedAttempts times before the URL is fetched without an
// answer, and a former owner along a chain that meets one grants nothing
// (Reply.Retry).
var ErrRefused = errors.New("claim: refused by the former owner")

// Transport carries claims to other nodes.
type Transport interface {
	// Claim sends q to the node running former and returns its reply. An
	// error means no reply arrived.
	Claim(ctx context.Context, former ring.Node, q Request) (Reply, error)
	// Alive reports whether the node running (or that ran) virtual
	// server v answers now (ring.Ring.Answers).
	Alive(ctx context.Context, v ring.Node) bool
}

// Ring is what claims need of the local ring (ring.Ring has it).
type Ring interface {
	Vnodes() []ring.Node
	// Predecessor returns the predecessor of local virtual server v, if
	// known.
	Predecessor(v id.ID) (ring.Node, bool)
}

// History reports whether this node fetched url on day before it last
// started (its store's crawl state): what a node that restarted during the
// day no longer holds in memory. It may be nil.
type History func(ctx context.Context, url string, day int64) bool

// Config configures Claims. Peer, Ring and Transport are required.
type Config struct {
	Peer      string // this node's peer id
	Ring      Ring
	Transport Transport
	History   History
	// MaxVirtualServers bounds the virtual-server indexes a claimer may
	// use (ring.CheckID). Default ring.DefaultMaxVirtualServers.
	MaxVirtualServers int
	// MaxHops bounds the chain of former owners one claim follows before
	// the answer sends the claimer on to the rest (Reply.Next). Default 4.
	// A claimer asks at most maxRounds such chains; one still cut after
	// them lets the claimer fetch a URL a former owner may have fetched
	// (Stats.Cut counts the cuts).
	MaxHops int
	// Attempts is how often a claim is sent before the URL is fetched
	// without an answer. Default 3.
	Attempts int
	// RefusedAttempts replaces Attempts while every failure was a refusal
	// (ErrRefused, Reply.Retry): a former owner that refuses is alive and
	// may fetch, so the claim waits longer for it. Default 8 (about 14 s
	// with the default Wait).
	RefusedAttempts int
	// Wait returns after the pause before retry attempt a (1, 2, …) or
	// when ctx ends. Default: a real timer of a × 500 ms.
	Wait func(ctx context.Context, attempt int) error
	// FetchSetKeys bounds the day's fetches held in memory: between
	// FetchSetKeys and twice as many of the most recent (recent.go), 8
	// bytes and a map slot each. Older ones are found through History;
	// a graceful leave hands over only those held (Fetched). Default
	// DefaultFetchSetKeys.
	FetchSetKeys int
	Logger       *slog.Logger
}

// Stats counts a node's claims since it started.
type Stats struct {
	Sent       int64 `json:"sent"`       // claims this node sent to former owners
	Taken      int64 `json:"taken"`      // of those, answered "taken": not fetched here
	Away       int64 `json:"away"`       // claims this node granted to newer owners
	Elsewhere  int64 `json:"elsewhere"`  // claims answered "not yours": passed on
	Unanswered int64 `json:"unanswered"` // claims that got no answer: fetched here
	Cut        int64 `json:"cut"`        // chains of former owners cut at MaxHops
	Refused    int64 `json:"refused"`    // claims refused for now, and asked again
}

// maxRounds bounds the chains of at most MaxHops former owners one claim
// asks in turn (Reply.Next).
const maxRounds = 4

// short is a URL key's first 8 bytes, what the day's sets hold.
type short uint64

func shortOf(k id.ID) short { return short(binary.BigEndian.Uint64(k[:8])) }

// long widens a short key back to an id (the rest zero), close enough for
// range tests: it lands on the key's side of any range boundary unless
// the boundary shares its first 8 bytes.
func (s short) long() id.ID {
	var k id.ID
	binary.BigEndian.PutUint64(k[:8], uint64(s))
	return k
}

// awayClaim is a URL key a newer owner claimed, the newer owner's
// virtual server that claimed it, and the peer at the start of the claim's
// chain of former owners (the one that fetches the URL; the newer owner's
// own peer when it claimed for itself).
type awayClaim struct {
	key     id.ID
	vnode   ring.Node
	claimer string
}

// claimerOf returns the peer at the start of q's chain: the node that
// fetches the URL if the claim is granted.
func claimerOf(q Request) string {
	if len(q.Chain) > 0 {
		return q.Chain[0]
	}
	return q.Vnode.Peer
}

// Claims is one node's record of the day's fetches and claims.
type Claims struct {
	cfg Config
	log *slog.Logger

	sent, taken, away, elsewhere, unanswered, cut, refused atomic.Int64

	mu     sync.Mutex
	day    int64
	rolled bool
	mine   recentSet             // keys this node fetched or is fetching today, the most recent (recent.go)
	gone   map[short]awayClaim   // keys a newer owner claimed today
	had    map[short]struct{}    // keys a former owner had fetched today (at most maxHad)
	handed map[id.ID]int         // handovers taken today, by virtual server
	former map[id.ID][]ring.Node // per local vnode id: the former owners of its range on day since, oldest first
	since  map[id.ID]int64       // per local vnode id: the day it last took its range
}

// New returns an empty Claims.
func New(cfg Config) *Claims {
	if cfg.MaxVirtualServers <= 0 {
		cfg.MaxVirtualServers = ring.DefaultMaxVirtualServers
	}
	if cfg.MaxHops <= 0 {
		cfg.MaxHops = 4
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.FetchSetKeys <= 0 {
		cfg.FetchSetKeys = DefaultFetchSetKeys
	}
	if cfg.RefusedAttempts < cfg.Attempts {
		cfg.RefusedAttempts = max(8, cfg.Attempts)
	}
	if cfg.Wait == nil {
		cfg.Wait = func(ctx context.Context, a int) error {
			t := time.NewTimer(time.Duration(a) * 500 * time.Millisecond)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Claims{cfg: cfg, log: log,
		former: make(map[id.ID][]ring.Node), since: make(map[id.ID]int64)}
}

// Held returns how many of the day's fetches the node holds in memory
// (at most twice Config.FetchSetKeys).
func (c *Claims) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mine.len()
}

// Stats returns the counters.
func (c *Claims) Stats() Stats {
	return Stats{Sent: c.sent.Load(), Taken: c.taken.Load(), Away: c.away.Load(),
		Elsewhere: c.elsewhere.Load(), Unanswered: c.unanswered.Load(), Cut: c.cut.Load(),
		Refused: c.refused.Load()}
}

// rollLocked resets the day's sets when day is a new one.
func (c *Claims) rollLocked(day int64) {
	if c.rolled && c.day == day {
		return
	}
	c.day, c.rolled = day, true
	c.mine = newRecentSet(c.cfg.FetchSetKeys)
	c.gone = make(map[short]awayClaim)
	c.had = make(map[short]struct{})
	c.handed = make(map[id.ID]int)
}

// maxHad bounds the keys a day's had set holds (about 32 MiB): past it
// a key a former owner fetched is not remembered, and this node fetches
// it again (a second request to its site that day, not a loss), so that
// the members that hand over or answer claims cannot fill its memory.
const maxHad = 2_000_000

// markHadLocked records s as fetched today by a former owner, while
// the set is under maxHad. The caller holds c.mu.
func (c *Claims) markHadLocked(s short) {
	if len(c.had) < maxHad {
		c.had[s] = struct{}{}
	}
}

// Took records that local virtual server v took its range on day from
// former: a join, a twin's move or a move for a fairer share. A virtual
// server that takes its range more than once on a day (in a forming ring:
// a join, then a twin's move or a join in front of it) keeps every former
// owner of the day: each may have fetched URLs of the range. A former
// owner on this node itself fetched nothing a claim could find (its
// fetches are this node's), but its own former owners of the day may
// have: v takes them over.
func (c *Claims) Took(v id.ID, former ring.Node, day int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	if former.Peer == "" {
		return
	}
	formers := []ring.Node{former}
	if former.Peer == c.cfg.Peer {
		formers = c.formersLocked(former.ID, day)
		if len(formers) == 0 {
			return
		}
	}
	if c.since[v] != day {
		c.former[v] = nil
	}
	c.since[v] = day
	for _, f := range formers {
		if !slices.ContainsFunc(c.former[v], func(g ring.Node) bool { return g.ID == f.ID && g.Peer == f.Peer }) {
			c.former[v] = append(c.former[v], f)
		}
	}
	c.log.Debug("claim: took a range", "vnode", v.Short(), "former", former.String(), "formers", len(c.former[v]))
}

// formersLocked returns the nodes that held v's range before this node
// took it on day, oldest first (nil if it did not take it on day).
func (c *Claims) formersLocked(v id.ID, day int64) []ring.Node {
	if c.since[v] != day {
		return nil
	}
	return slices.Clone(c.former[v])
}

// Release forgets the claims in g that newer owners made on day, when
// their nodes no longer answer: the range came back to this node (its
// predecessor died or left), and a URL claimed by a node that is gone
// would otherwise be fetched by no one. Claims of nodes that answer stay,
// whether or not they still run the claiming virtual server: a range can
// come back for a moment only, while the ring learns of a joiner again,
// and a claimer fetches a URL as soon as it is granted, so one that moved
// its virtual server since has it (and handed it over, Config.Moving in
// package ring).
func (c *Claims) Release(ctx context.Context, g ring.Range, day int64) int {
	c.mu.Lock()
	c.rollLocked(day)
	probe := map[string]ring.Node{} // one virtual server to ping per claiming node
	for _, a := range c.gone {
		if g.Contains(a.key) {
			probe[a.vnode.Peer] = a.vnode
		}
	}
	c.mu.Unlock()
	alive := make(map[string]bool, len(probe))
	for p, v := range probe {
		alive[p] = c.cfg.Transport.Alive(ctx, v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	n := 0
	for s, a := range c.gone {
		if answers, asked := alive[a.vnode.Peer]; asked && !answers && g.Contains(a.key) {
			delete(c.gone, s)
			n++
		}
	}
	return n
}

// Outcome is ToFetch's decision.
type Outcome int

const (
	// Fetch: the URL is this node's to fetch today; it is marked as such.
	Fetch Outcome = iota
	// Drop: a newer owner claimed it, or a former owner fetched it today.
	Drop
	// PassOn: by a former owner's view the URL is not this node's; pass
	// it to its owner.
	PassOn
)

// ToFetch decides, just before a fetch on day, whether this node fetches
// url (key), owned by its virtual server v by its view. A URL it may
// fetch is marked as its own for the day.
func (c *Claims) ToFetch(ctx context.Context, url string, key id.ID, v ring.Node, day int64) Outcome {
	o, _ := c.ToFetchVia(ctx, url, key, v, day)
	return o
}

// ToFetchVia is ToFetch that also returns, with PassOn, the former owner
// that answered "elsewhere": its view of the ring is ahead of this node's,
// so the URL is best passed on through it (a lookup from this node's own
// tables would find this node again).
func (c *Claims) ToFetchVia(ctx context.Context, url string, key id.ID, v ring.Node, day int64) (Outcome, ring.Node) {
	s := shortOf(key)
	c.mu.Lock()
	c.rollLocked(day)
	if c.mine.has(s) {
		c.mu.Unlock()
		return Fetch, ring.Node{}
	}
	if c.droppedLocked(s) {
		c.mu.Unlock()
		return Drop, ring.Node{}
	}
	formers := c.formersLocked(v.ID, day)
	c.mu.Unlock()
	// The newest former owner first: its view of the ring is the latest,
	// so it is the one to tell the URL is elsewhere.
	for i := len(formers) - 1; i >= 0; i-- {
		former := formers[i]
		rep, err := c.askChain(ctx, url, v, day, former)
		switch {
		case err != nil:
			c.unanswered.Add(1)
			c.log.Debug("claim: former owner did not answer; fetching here unless another says taken", "url", url, "former", former, "err", err)
		case rep.Taken:
			c.taken.Add(1)
			c.mu.Lock()
			c.rollLocked(day)
			c.markHadLocked(s)
			c.mu.Unlock()
			return Drop, ring.Node{}
		case rep.Elsewhere:
			c.elsewhere.Add(1)
			return PassOn, former
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	if c.droppedLocked(s) {
		return Drop, ring.Node{} // claimed away, or handed over, while we asked
	}
	c.mine.add(s)
	c.log.Debug("claim: fetch", "url", url, "vnode", v.ID.Short(), "claimed", len(formers) > 0)
	return Fetch, ring.Node{}
}

// askChain claims url from former for local virtual server v, and asks on
// along the chain of former owners past each cut (Reply.Next) until an
// answer is final or maxRounds chains were asked.
func (c *Claims) askChain(ctx context.Context, url string, v ring.Node, day int64, former ring.Node) (Reply, error) {
	rep, err := c.ask(ctx, former, Request{URL: url, Day: day, Vnode: v, To: former.ID})
	c.log.Debug("claim: asked", "url", url, "vnode", v.ID.Short(), "former", former.String(),
		"taken", rep.Taken, "elsewhere", rep.Elsewhere, "err", err)
	for round := 1; err == nil && rep.Next != nil && !rep.Taken && !rep.Elsewhere; round++ {
		next := *rep.Next
		if round >= maxRounds || slices.Contains(rep.Chain, next.Peer) {
			// Back at a node of the chain (this one, first): no owner it
			// reached fetched the URL.
			return Reply{}, nil
		}
		// The chain goes on past MaxHops: ask the rest of it, as a former
		// owner further along would (Hops > 0).
		rep, err = c.ask(ctx, next, Request{URL: url, Day: day, Vnode: v, To: next.ID, Hops: 1, Chain: rep.Chain})
		c.log.Debug("claim: asked further along the chain", "url", url, "former", next.String(),
			"taken", rep.Taken, "err", err)
	}
	return rep, err
}

// ask sends q to former, up to Attempts times while no reply arrives, or
// RefusedAttempts times while every failure is a refusal.
func (c *Claims) ask(ctx context.Context, former ring.Node, q Request) (Reply, error) {
	var err error
	refusals := true
	for a := 0; a < c.cfg.Attempts || (refusals && a < c.cfg.RefusedAttempts); a++ {
		if a > 0 {
			if werr := c.cfg.Wait(ctx, a); werr != nil {
				return Reply{}, fmt.Errorf("claim %s: %w", q.URL, werr)
			}
		}
		c.sent.Add(1)
		var rep Reply
		rep, err = c.cfg.Transport.Claim(ctx, former, q)
		if err == nil && rep.Retry {
			err = fmt.Errorf("a former owner along the chain: %w", ErrRefused)
		} else if err == nil && rep.Err == "" {
			return rep, nil
		} else if err == nil {
			return Reply{}, fmt.Errorf("claim %s: %s", q.URL, rep.Err)
		}
		if errors.Is(err, ErrRefused) {
			c.refused.Add(1)
		} else {
			refusals = false
		}
	}
	return Reply{}, fmt.Errorf("claim %s: %w", q.URL, err)
}

// Dropped reports whether key is another node's for day (claimed away, or
// fetched by a former owner): it leaves the queue without being passed on.
func (c *Claims) Dropped(key id.ID, day int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollLocked(day)
	return c.droppedLocked(shortOf(key))
}

// droppedLocked reports whether s is another node's today: claimed away,
// or fetched (or handed over) by another node.
func (c *Claims) droppedLocked(s short) bool {
	_, gone := c.gone[s]
	_, had := c.had[s]
	return gone || had
}

// chainOf is the Chain of the claim that node self sends on to its own
// former owner while it answers q: q's chain (the claimer alone at the
// first hop) and self.
func chainOf(q Request, self string) []string {
	ch := slices.Clone(q.Chain)
	if len(ch) == 0 {
		ch = append(ch, q.Vnode.Peer)
	}
	return append(ch, self)
}

// twinOf reports whether local virtual server ours has, as predecessor,
// another peer's virtual server with v's id.
func (c *Claims) twinOf(ours id.ID, v ring.Node) bool {
	p, ok := c.cfg.Ring.Predecessor(ours)
	return ok && p.ID == v.ID && p.Peer != v.Peer
}
