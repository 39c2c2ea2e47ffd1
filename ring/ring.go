package ring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Config configures a Ring. Zero values mean the documented defaults.
type Config struct {
	// Self is this real node. Addr must be a canonical "ip:port".
	Self Contact
	// VirtualServers is how many virtual servers this node runs (default 4).
	VirtualServers int
	// MaxVirtualServers bounds the index of every virtual server, local or
	// remote (default 64); claims with index >= this are refused.
	MaxVirtualServers int
	// Indexes, when set, are the exact virtual-server indexes to run
	// (distinct, each < MaxVirtualServers); VirtualServers is then their
	// number. Use it to restart at the positions Ring.Indexes reported.
	Indexes []int
	// ChooseIndexes makes the first Join pick which VirtualServers of the
	// MaxVirtualServers possible indexes to run: those whose ids best split
	// the gaps of the ring as it is (PickIndexes). Ids stay
	// VirtualID(addr, index) with index < MaxVirtualServers, so a node gains
	// no power to place itself beyond what running MaxVirtualServers vnodes
	// would give it. Ignored when Indexes is set.
	ChooseIndexes bool
	// SuccessorListLen is r, the successor list length (default 8).
	SuccessorListLen int
	// StabilizeInterval is the mean period of maintenance rounds (default
	// 2s); each wait is jittered uniformly in [0.5, 1.5) of it.
	StabilizeInterval time.Duration
	// CallTimeout bounds each RPC (default 5s).
	CallTimeout time.Duration
	// Clock is the time source; nil means real time.
	Clock Clock
	// Resolver, when set, finds the current contact of a peer that stopped
	// answering at its old address (ring/p2p.DHT does it over kad-dht), so
	// that rings reconnect after a member's address changed.
	Resolver Resolver
	// Took, when set, is called each time a local virtual server joins
	// the ring (Join, a twin's move, a move for a fairer share) with the
	// virtual server and the virtual server that held its range until
	// then (its successor at that moment, which may be one of this node's
	// own, or a twin: another node's with the same id); for a move, also
	// with the holder the move found when it chose the index. It is called with the ring's lock
	// held, before the virtual server answers for its range, so it must
	// not call the Ring, nor wait for a lock that anyone holds while
	// calling it.
	Took func(v, former Node)
	// Moving, when set, is called before a local virtual server leaves its
	// index for another (a move for a fairer share), with the virtual
	// server, the range it owns and the successor on another node that
	// inherits it, without the ring's lock: the node hands that heir what
	// it fetched there today.
	Moving func(ctx context.Context, v Node, r Range, heir Node)
	// Logger receives debug and warning logs; nil discards them.
	Logger *slog.Logger
}

// Resolver finds the current contact of a real node by its peer id.
type Resolver interface {
	Resolve(ctx context.Context, peer string) (Contact, error)
}

// Defaults.
const (
	DefaultVirtualServers    = 4
	DefaultMaxVirtualServers = 64
	DefaultSuccessorListLen  = 8
	DefaultStabilizeInterval = 2 * time.Second
	DefaultCallTimeout       = 5 * time.Second
	// maxPreceding is how many nodes an OpStep reply lists.
	maxPreceding = 8
	// graveCap bounds the remembered failed peers probed for ring merging.
	graveCap = 64
	// maxStrikes consecutive failed calls mark a peer dead.
	maxStrikes = 3
	// graveTTL is how long a dead peer is probed for merging.
	graveTTL = 30 * time.Minute
)

type graveEntry struct {
	n  Node
	at time.Time
}

// Errors of the ring.
var (
	ErrClosed       = errors.New("ring: closed")
	ErrLookupFailed = errors.New("ring: lookup failed")
	ErrConfig       = errors.New("ring: bad config")
)

func (c Config) withDefaults() (Config, error) {
	if len(c.Indexes) > 0 {
		c.VirtualServers = len(c.Indexes)
		c.ChooseIndexes = false
	}
	if c.VirtualServers == 0 {
		c.VirtualServers = DefaultVirtualServers
	}
	if c.MaxVirtualServers == 0 {
		c.MaxVirtualServers = DefaultMaxVirtualServers
	}
	if c.SuccessorListLen == 0 {
		c.SuccessorListLen = DefaultSuccessorListLen
	}
	if c.StabilizeInterval == 0 {
		c.StabilizeInterval = DefaultStabilizeInterval
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.VirtualServers < 1 || c.VirtualServers > c.MaxVirtualServers:
		return c, fmt.Errorf("%w: %d virtual servers, max %d", ErrConfig, c.VirtualServers, c.MaxVirtualServers)
	case c.SuccessorListLen < 1:
		return c, fmt.Errorf("%w: successor list length %d", ErrConfig, c.SuccessorListLen)
	case c.Self.Peer == "":
		return c, fmt.Errorf("%w: empty peer id", ErrConfig)
	}
	if err := CheckAddr(c.Self.Addr); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	seen := map[int]bool{}
	for _, i := range c.Indexes {
		if i < 0 || i >= c.MaxVirtualServers || seen[i] {
			return c, fmt.Errorf("%w: index %d (max %d, no repeats)", ErrConfig, i, c.MaxVirtualServers)
		}
		seen[i] = true
	}
	c.Indexes = slices.Clone(c.Indexes)
	return c, nil
}

// Ring is this real node's membership in the Chord ring: its virtual
// servers and their routing state. All methods are safe for concurrent use.
type Ring struct {
	cfg   Config
	tr    Transport
	log   *slog.Logger
	clock Clock

	mu      sync.Mutex
	vnodes  []*vnode             // sorted by id
	suspect map[string]time.Time // peer -> suspected dead until
	// leaving is when each peer last announced that a virtual server of
	// its leaves (OpLeave): a node that left, or moved a position.
	leaving map[string]time.Time
	strikes map[string]int // peer -> consecutive failed calls
	// heard is when each peer last answered a call (known.go).
	heard map[string]time.Time
	// distrustUntil: until then lookups are not answered from the local
	// successor lists (Disowned).
	distrustUntil time.Time
	edgeBuf       []edge       // localHolders' scratch
	grave         []graveEntry // peers removed as dead, probed for merging
	graveAt       int
	rng           *rand.Rand
	left          bool
	joined        bool // Join succeeded once
	ver           verifier
	// moving is held while local virtual servers join or move (Join,
	// moveTwins, Rebalance): one change of the local set at a time.
	moving sync.Mutex
	events eventBus

	n counters

	cancel context.CancelFunc
	done   chan struct{}
	closed atomic.Bool
}

// New returns a Ring whose virtual servers form a ring of their own until
// Join. It installs its handler on tr.
func New(cfg Config, tr Transport) (*Ring, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	seed := VirtualID(cfg.Self.Addr, 0)
	r := &Ring{
		cfg:     cfg,
		tr:      tr,
		log:     cfg.Logger,
		clock:   cfg.Clock,
		suspect: make(map[string]time.Time),
		leaving: make(map[string]time.Time),
		strikes: make(map[string]int),
		heard:   make(map[string]time.Time),
		rng:     rand.New(rand.NewPCG(uint64(seed[0])<<56|uint64(seed[1])<<48|uint64(seed[2])<<40, uint64(seed[3]))),
	}
	r.ver.init()
	r.setVnodes(cfg.Indexes)
	tr.Handle(r.handle)
	return r, nil
}

// setVnodes replaces the local vnodes by those with the given indexes
// (nil: 0..VirtualServers-1), forming a ring of their own. Caller holds
// mu or has not shared r yet.
func (r *Ring) setVnodes(indexes []int) {
	if indexes == nil {
		for i := range r.cfg.VirtualServers {
			indexes = append(indexes, i)
		}
	}
	r.vnodes = r.vnodes[:0]
	for _, i := range indexes {
		n := Node{ID: VirtualID(r.cfg.Self.Addr, i), Contact: r.cfg.Self, Index: i}
		r.vnodes = append(r.vnodes, &vnode{self: n})
	}
	slices.SortFunc(r.vnodes, func(a, b *vnode) int { return a.self.ID.Cmp(b.self.ID) })
	local := r.localNodes()
	for _, v := range r.vnodes {
		v.setSuccs(r.trim(sortFrom(v.self.ID, local)), nil)
		v.setPred(r.closestPreceding(v.self.ID, local), nil)
	}
}

// Indexes returns the virtual-server indexes this node runs, in id
// order; persist them to come back at the same positions after a restart
// (Config.Indexes).
func (r *Ring) Indexes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, len(r.vnodes))
	for i, v := range r.vnodes {
		out[i] = v.self.Index
	}
	return out
}

// Start begins periodic maintenance (stabilize, notify, fix-fingers,
// check-predecessor, merge probing) on jittered timers until ctx ends or
// Close. A node that never joins is a ring of its own virtual servers.
func (r *Ring) Start(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	r.mu.Lock()
	if r.done != nil {
		r.mu.Unlock()
		return errors.New("ring start: already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.done = make(chan struct{})
	r.mu.Unlock()
	go r.loop(ctx)
	return nil
}

func (r *Ring) loop(ctx context.Context) {
	defer close(r.done)
	for {
		r.mu.Lock()
		d := time.Duration(float64(r.cfg.StabilizeInterval) * (0.5 + r.rng.Float64()))
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(d):
		}
		r.Maintain(ctx)
	}
}

// Close stops maintenance and removes the handler. It does not notify
// neighbours; call Leave first for a graceful exit.
func (r *Ring) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	r.tr.Handle(nil)
	r.events.closeAll()
	return nil
}

// Self returns this real node's contact.
func (r *Ring) Self() Contact { return r.cfg.Self }

// Vnodes returns this node's virtual servers in id order.
func (r *Ring) Vnodes() []Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.localNodes()
}

// Answers reports whether v's node answers a ping now. The ping names v:
// a node that no longer runs v (it moved v to another index) still
// answers, and v is forgotten from this node's tables.
func (r *Ring) Answers(ctx context.Context, v Node) bool {
	_, err := r.call(ctx, v.Contact, &Message{Op: OpPing, To: v.ID})
	var re *RemoteError
	return err == nil || (errors.As(err, &re) && re.Code == ErrCodeNoVnode)
}

// Predecessor returns the predecessor of this node's virtual server v,
// if v runs here and its predecessor is known.
func (r *Ring) Predecessor(v id.ID) (Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lv := r.local(v); lv != nil && lv.pred != nil {
		return *lv.pred, true
	}
	return Node{}, false
}

// Owns reports, from local knowledge only, whether key lies in
// (pred(v), v] for one of the local virtual servers v. A virtual server
// whose predecessor is unknown owns nothing.
func (r *Ring) Owns(key id.ID) bool {
	_, ok := r.OwnerVnode(key)
	return ok
}

// OwnerVnode returns the local virtual server whose range holds key, by
// local knowledge only.
func (r *Ring) OwnerVnode(key id.ID) (Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.vnodes {
		if v.pred != nil && id.InHalfOpen(key, v.pred.ID, v.self.ID) {
			return v.self, true
		}
	}
	return Node{}, false
}

// OwnsLastKnown is Owns where a local virtual server whose predecessor
// is unknown for the moment owns the range it last knew: what a day's
// crawl is planned by (a new day queues every URL the node owns). By
// Owns, a predecessor that died or stopped answering just as the day
// began would drop the whole range from the day; a range that grows when
// the next predecessor is learnt is taken over then, and one that shrank
// (a node joined in front) is passed on at fetch time.
func (r *Ring) OwnsLastKnown(key id.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.vnodes {
		if v.lastPred != nil && id.InHalfOpen(key, *v.lastPred, v.self.ID) {
			return true
		}
	}
	return false
}

// CloserOwner helps route a key that no local virtual server owns although
// a lookup led to this node: it takes the first local virtual server v at
// or after key and, when v's predecessor lies between key and v and is a
// virtual server of another node, returns that predecessor. v learned of
// it from its notify, while the routing state of other nodes may not know
// it yet (a virtual server that joined recently): the key's owner is that
// predecessor or lies before it, so sending the key there makes progress
// where another lookup would lead back here. ok is false when there is no
// such predecessor (or a local virtual server owns key).
func (r *Ring) CloserOwner(key id.ID) (Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first *vnode
	for _, v := range r.vnodes {
		if v.pred != nil && id.InHalfOpen(key, v.pred.ID, v.self.ID) {
			return Node{}, false // owned here
		}
		if first == nil || dist(key, v.self.ID).Less(dist(key, first.self.ID)) {
			first = v
		}
	}
	if first == nil || first.pred == nil {
		return Node{}, false
	}
	p := *first.pred
	if p.Peer == r.cfg.Self.Peer || p.ID == first.self.ID {
		return Node{}, false
	}
	if p.ID != key && !id.InOpen(p.ID, key, first.self.ID) {
		return Node{}, false
	}
	return p, true
}

// localNodes returns the local vnodes' Node values. Caller holds mu.
func (r *Ring) localNodes() []Node {
	out := make([]Node, len(r.vnodes))
	for i, v := range r.vnodes {
		out[i] = v.self
	}
	return out
}

// local returns the local vnode with the given id. Caller holds mu.
func (r *Ring) local(x id.ID) *vnode {
	for _, v := range r.vnodes {
		if v.self.ID == x {
			return v
		}
	}
	return nil
}

func (r *Ring) trim(nodes []Node) []Node {
	if len(nodes) > r.cfg.SuccessorListLen {
		nodes = nodes[:r.cfg.SuccessorListLen]
	}
	return nodes
}

// closestPreceding returns the node of nodes that most closely precedes
// x (x itself excluded), or nil.
func (r *Ring) closestPreceding(x id.ID, nodes []Node) *Node {
	s := topToward(x, nodes, 1, nil)
	if len(s) == 0 {
		return nil
	}
	n := s[0]
	return &n
}

// isSuspect reports whether peer is currently suspected dead. Caller holds mu.
func (r *Ring) isSuspect(peer string) bool {
	until, ok := r.suspect[peer]
	if !ok {
		return false
	}
	if r.clock.Now().After(until) {
		delete(r.suspect, peer)
		return false
	}
	return true
}

func (r *Ring) suspectTTL() time.Duration { return 3 * r.cfg.StabilizeInterval }
