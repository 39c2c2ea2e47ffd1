package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// Replication places every key on k = Config.K real nodes: the
// owner of the key (the real node running the virtual server whose range
// (pred, v] holds it) and the next k-1 distinct real nodes clockwise from
// v, skipping further virtual servers of nodes already counted — the
// thesis's "owner plus successors", made safe for virtual servers, where
// the next k-1 virtual servers may well run on the owner itself.
//
// Why two adjacent failures (any two, in fact) lose nothing: walking
// clockwise from a key, every virtual server met before the first one of
// the third distinct real node belongs to one of the three holders. With
// at most two of them dead, the first live virtual server on that walk —
// the key's new owner once the ring has stabilized — runs on a surviving
// holder, so lookups (and the gateway) find the files where they are.
//
// Each round, for each local virtual server v with a known range
// (pred, v] and each of its replicas c, the owner
//
//  1. pulls (pred, v] from c (replicate.Sync: what c holds and it lacks —
//     this is how a node that has just taken over a range gets its files),
//  2. unless the two sums were equal, sends c an OpPull request naming
//     (pred, v] and itself; c verifies that the range ends at one of the
//     sender's own virtual servers and queues a Sync of (pred, v] from the
//     owner. So each replica compares with its predecessor owner and each
//     owner with its successors, as in the thesis, and in sync a pair costs
//     one round trip.
//
// Nothing is deleted: a node that stops being a holder keeps its copies.

// Protocol carries replicate's requests: one stream per request, one
// length-prefixed frame each way.
const Protocol protocol.ID = "/herod/replicate/1.0.0"

// Replication defaults.
const (
	// Factor is the default k (Config.K): every key is held by its owner
	// and by the next k-1 distinct real nodes clockwise (skipping further
	// virtual servers of nodes already counted), so any k-1 real nodes
	// may die at once without losing a file.
	Factor = 3
	// DefaultInterval is the period of replication rounds. A round costs
	// one round trip of 67 bytes per (range, replica) pair when in sync,
	// so the period bounds how stale a replica can be, not the bandwidth.
	// Tests shorten it with SetInterval. The first round runs one period
	// after Run starts, once the ring has settled.
	DefaultInterval = 30 * time.Second
	// Settle is how long after the last change of a local virtual
	// server's range or successors a round runs (if sooner than the next
	// periodic one): long enough for a failure's burst of ring changes to
	// end, short enough that lost copies are restored quickly.
	Settle = time.Second
	// pullQueueLen bounds the pull requests a node has accepted and not
	// yet served; owners repeat theirs every round.
	pullQueueLen = 256
	// streamTimeout bounds serving one request, as for the node's other
	// protocols.
	streamTimeout = 30 * time.Second
)

// ErrRole is wrapped by the refusal of a pull request outside the
// sender's role (the text is the node's for every such refusal).
var ErrRole = errors.New("node: outside the sender's role")

// Ring is what a Replicator needs of the ring; *ring.Ring implements it.
type Ring interface {
	// Status returns the local virtual servers' ranges and successors.
	Status() ring.Status
	// Successors returns the owner of key and the virtual servers after
	// it, up to k distinct real nodes.
	Successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error)
}

// Purge carries a node's purge orders to a replica before any file
// moves (purge.Book and purge.Exchanger).
type Purge interface {
	// Digest names the orders this node holds (equal digests: the same
	// orders).
	Digest() string
	// Exchange brings this node's orders and c's together and returns
	// the digest both hold afterwards, "" if they still differ.
	Exchange(ctx context.Context, c ring.Contact) (string, error)
}

// Config is what a Replicator needs. Every field but Purge, RefuseRole,
// BadFrame, ReadReply, WriteReply, Held, Check and Logger must
// be set.
type Config struct {
	Self     ring.Contact  // this node
	K        int           // the replication factor (Factor if 0)
	Interval time.Duration // the period of rounds; <= 0 disables them
	Ring     Ring
	// Local is the store syncs import into; Source the one this node
	// answers replicas from and sums its ranges with.
	Local  replicate.Local
	Source replicate.Source
	// Dicts serves the dictionaries of this node's zstd records to its
	// replicas (DictProtocol); nil answers every request "not found".
	Dicts Dicts
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	// Gate returns the verified ring member a stream comes from; for
	// another peer it resets the stream and returns false.
	Gate func(s network.Stream) (ring.Node, bool)
	// RefuseRole counts and logs a member's request outside its role.
	RefuseRole func(m ring.Node, proto string, err error)
	// BadFrame counts a request that did not parse or broke the protocol.
	BadFrame func()
	// ReadReply wraps the stream a pulled reply is read from (the
	// node's download caps); nil reads it as it is.
	ReadReply func(ctx context.Context, s network.Stream) io.Reader
	// WriteReply returns the writer a reply of size bytes is written to
	// s through (the node's upload caps); nil writes to s.
	WriteReply func(s network.Stream, size int) io.Writer
	// ReplyBudget bounds the record bytes this node's replies hold at
	// once (replicate.Server.Budget): a batch's records past it are
	// omitted and asked for again, so members that request batches and
	// read them slowly cannot hold MaxActive times replicate.MaxReply of
	// its memory. The node shares one with its other replies; nil means
	// one of wire.DefaultReplyBytes of the Replicator's own.
	ReplyBudget *wire.ReplyBudget
	// Purge, if set, exchanges purge orders at the start of each round.
	Purge Purge
	// ShareKnown, if set, hands the URLs NotifyKnown queues to the nodes
	// that hold their ranges, to be remembered there (push.go).
	ShareKnown func(ctx context.Context, urls []string) error
	// Paused, if set, reports why this node stores nothing now ("disk
	// full"): rounds are skipped, pull requests dropped and offers refused
	// until it reports "" (the owners push again, and rounds repair).
	Paused func() string
	// SetRanges, if set, is told the ranges this node replicates for
	// other owners whenever the set changes, as their verified pull
	// requests and offers name them (archive.Store.SetRanges: each
	// range's share of the quota; share.go).
	SetRanges func(rs []archive.KeyRange) error
	// Held keeps the records other members hand off until this node's
	// own fetch confirms them (hold.go; OpenHeld), and Check verifies a
	// record as Local's Import does, storing nothing
	// (archive.Store.CheckImport); a Local that is a
	// replicate.CondImporter verifies a record it may not store once
	// (importIf). Without both, hand-offs are refused.
	Held  *Held
	Check func(ctx context.Context, name string, data []byte) (archive.Version, error)
	// TrackCopies makes the push remember which replicas confirmed each
	// record, for WaitCopies (the crawler's --write-copies above 1).
	TrackCopies bool
	// DayLength is the store's crawl day (archive.Options.DayLength; 0
	// means 24 h): a round imports a replica's record of a day that ended
	// before this node owned its key without reading it twice (guard.go).
	DayLength time.Duration
	// OwnedFile, if set, keeps the history of this node's ranges across
	// restarts, with the last time it was known up (owned.go): without
	// it, a restart forgets when this node owned what.
	OwnedFile string
	Logger    *slog.Logger // nil: discard
}

// Replicator runs a node's replication: a loop that, every interval, pulls
// each of the node's ranges from its replicas and asks them to pull it from
// the node (Run), and a worker that serves the pull requests other owners
// send (Work), which Handle accepts.
type Replicator struct {
	cfg      Config
	log      *slog.Logger
	interval atomic.Int64 // nanoseconds; <= 0 disables rounds
	kick     chan struct{}
	// pushLeft is set when offers failed twice and their records were
	// left to rounds (push.go): Run then holds a round Settle after the
	// last ring change, not a whole interval later (a node that dies in
	// between would take them with it).
	pushLeft atomic.Bool
	jobs     chan pullJob
	roundMu  sync.Mutex // one round at a time

	purgeMu     sync.Mutex                // guards purgeAgreed
	purgeAgreed map[string]purgeAgreement // by replica peer: purge.go

	lag       prometheus.Histogram                                  // push lags (push.go)
	dicts     dictFetches                                           // dictionary fetches (dict.go)
	refused   refusedSet                                            // records refused for their signer's or range's share (share.go)
	ranges    replicatedRanges                                      // the ranges this node replicates (share.go)
	roles     roleCache                                             // owners' roles checked lately (rolecache.go)
	owned     ownedRanges                                           // when this node owned which keys (owned.go)
	recheckFn atomic.Pointer[func(context.Context, []string) error] // OnRecheck (hold.go)
	pushWake  chan struct{}
	// knownBackoff is the wait before a URL's share after tries failed
	// ones (push.go's knownBackoff; tests shorten it).
	knownBackoff func(tries int) time.Duration
	queueLen     int // bounds the push queue and each replica's (pushQueueLen; tests lower it)

	mu      sync.Mutex
	pq      pushQueue                      // what waits for a push (push.go)
	rq      map[ring.Contact]*replicaQueue // per replica: what waits for an offer; a sender runs while present
	trk     map[archive.Entry]*copyTracker // with TrackCopies: records' copies, for WaitCopies (acks.go)
	ho      handOffState                   // records held outside this node's roles (handoff.go)
	health  rangeHealth                    // per local range, from the last round
	queued  map[pullJob]bool
	busy    int // pull jobs being served
	st      Stats
	lastErr error
	// shortDone is the st.Push.Short a round read before it found k-1
	// replicas for every range: while it is less, records were pushed
	// short since, and Run holds a round as soon as the successor lists
	// name k-1 replicas (shortPending).
	shortDone int64
}

// pullJob is a range an owner asked this node to pull from it.
type pullJob struct {
	a, b id.ID
	from ring.Contact
}

// Stats counts a node's replication work since New.
type Stats struct {
	Interval time.Duration `json:"interval"`
	Rounds   int64         `json:"rounds"`
	// Pairs counts (range, replica) pairs handled by rounds: for each, one
	// sync pulling the range from the replica and, if the range differed,
	// one pull request asking the replica to sync it back.
	Pairs int64 `json:"pairs"`
	// Syncs adds up every Sync this node ran (its own ranges from their
	// replicas, and the ranges owners asked it to hold); its Traffic also
	// includes the pull requests this node sent.
	Syncs replicate.Stats `json:"syncs"`
	// PullRequests counts pull requests accepted from owners; Refused
	// those that failed verification; Dropped those lost to a full queue.
	PullRequests int64  `json:"pull_requests"`
	Refused      int64  `json:"refused"`
	Dropped      int64  `json:"dropped"`
	Errors       int64  `json:"errors"`
	LastError    string `json:"last_error,omitempty"`
	// Health is the state of this node's own ranges at the last round.
	Health Health `json:"health"`
	// Push counts the push path (push.go).
	Push PushStats `json:"push"`
	// Dicts counts dictionaries fetched from and served to peers (dict.go).
	Dicts DictStats `json:"dicts"`
	// HandOff counts the records handed to their owners by this node,
	// which holds them outside its roles, and from others (handoff.go).
	HandOff HandOffStats `json:"hand_off"`
}

// New returns a Replicator for cfg. It serves nothing until Handle is
// registered and runs no round until Run.
func New(cfg Config) *Replicator {
	if cfg.K == 0 {
		cfg.K = Factor
	}
	r := &Replicator{
		cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), jobs: make(chan pullJob, pullQueueLen),
		queued: map[pullJob]bool{}, purgeAgreed: map[string]purgeAgreement{},
		lag: newLagHistogram(), pushWake: make(chan struct{}, 1), rq: map[ring.Contact]*replicaQueue{}, knownBackoff: knownBackoff,
		trk:      map[archive.Entry]*copyTracker{},
		ho:       handOffState{sweep: true}, // the first round sweeps: a restart forgot what was pending
		queueLen: pushQueueLen,
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.cfg.ReplyBudget == nil {
		r.cfg.ReplyBudget = wire.NewReplyBudget(wire.DefaultReplyBytes)
	}
	r.interval.Store(int64(cfg.Interval))
	if cfg.OwnedFile != "" {
		if err := r.owned.load(cfg.OwnedFile); err != nil {
			r.log.Warn("replication: the history of this node's ranges is lost", "err", err)
		}
	}
	return r
}

// SetInterval sets the period of replication rounds, effective at once;
// d <= 0 stops rounds (pull requests from owners are still served).
func (r *Replicator) SetInterval(d time.Duration) {
	r.interval.Store(int64(d))
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Stats returns a snapshot of the replication counters.
func (r *Replicator) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Interval = time.Duration(r.interval.Load())
	st.Health = r.health.snapshot(time.Now())
	if r.lastErr != nil {
		st.LastError = r.lastErr.Error()
	}
	if r.cfg.Held != nil {
		n, b := r.cfg.Held.Len()
		st.HandOff.Held, st.HandOff.HeldBytes = int64(n), b
	}
	return st
}

// Idle reports whether no pull request is queued or being served.
func (r *Replicator) Idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queued) == 0 && r.busy == 0
}

// WaitRound returns once no round is running.
func (r *Replicator) WaitRound() {
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
}

// Round runs one replication round now (waiting for a running one to
// finish first) and returns the first error it met; the round goes on past
// errors, which the stats count.
func (r *Replicator) Round(ctx context.Context) error { return r.round(ctx) }

// Run runs a round every interval, and also Settle after the
// last of a burst of ring changes (a range or successor list of a local
// virtual server changed), so that the copies a failure took away are
// restored within seconds rather than a period.
//
// Changes before the first periodic round are ignored: the first round
// waits a whole interval after Run starts, while the node joins and the ring
// settles. Two kinds of records are the exception, as a node that died
// before the first round would take them with it:
//   - records whose offers failed twice (a replica that did not yet see
//     this node as their owner, while the ring forms): a round follows
//     Settle after the last ring change;
//   - records the push sent to fewer than k-1 replicas because their
//     range's successor list was still short: Run looks at the lists
//     ShortPoll, then 2, 4 … times that (at most the interval) later, and
//     holds a round as soon as they name k-1 replicas.
func (r *Replicator) Run(ctx context.Context, events <-chan ring.Event) {
	r.recheckHeld(ctx)                        // the held records still wait for this node's fetch
	changed, ran, soon := false, false, false // soon: pushes were left to rounds
	var poll time.Duration                    // between looks at short lists; 0: none pending
	var lookAt time.Time                      // the next look, not put off by kicks or ring changes
	var due time.Time                         // the next round
	reset := true                             // due is d from now: not after a look
	for {
		interval := time.Duration(r.interval.Load())
		var tick, look <-chan time.Time
		var t, l *time.Timer
		if d := interval; d > 0 {
			if changed || soon {
				d = min(d, Settle)
			}
			if reset {
				due = time.Now().Add(d)
			}
			t = time.NewTimer(time.Until(due))
			tick = t.C
			if poll == 0 && r.shortPending() {
				poll, lookAt = ShortPoll, time.Now().Add(ShortPoll)
			}
			if poll > 0 {
				l = time.NewTimer(time.Until(lookAt))
				look = l.C
			}
		}
		var fire, looked bool // looked: the round is for short pushes
		reset = true
		select {
		case <-ctx.Done():
		case <-r.kick: // the interval changed, or pushes were left to rounds
			if r.pushLeft.Swap(false) {
				soon = true // kept through ring changes until a round runs
			}
		case ev, ok := <-events:
			if !ok {
				events = nil // the ring closed
			}
			changed = ok && ran // wait for the ring to settle, then sync
			if ok {
				r.owned.observe(ev.Vnode.ID, ev.NewRange, r.owned.clock())
				r.mu.Lock()
				// A role this node lost may leave it records no holder has,
				// and an owner it handed records to may have died before
				// its replicas had them: the sweep lists every part again.
				r.ho.sweep, r.ho.handed = true, nil
				r.mu.Unlock()
			}
		case <-tick:
			fire = true
		case <-look:
			reset = false
			switch {
			case !r.shortPending():
				poll = 0
			case r.listsName(r.cfg.Ring.Status().Vnodes):
				fire, looked = true, true
			default:
				poll = min(2*poll, interval)
				lookAt = time.Now().Add(poll)
			}
		}
		if t != nil {
			t.Stop()
		}
		if l != nil {
			l.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if !fire {
			continue
		}
		// A round for short pushes is not the first periodic one: ring
		// changes until that one are still the ring forming.
		changed, ran, soon, poll = false, ran || !looked, false, 0
		if err := r.round(ctx); err != nil && ctx.Err() == nil {
			r.log.Debug("replication round", "err", err)
		}
	}
}

// ShortPoll is how long after a push sent records to fewer than k-1
// replicas Run first looks whether the successor lists name k-1 (Run).
const ShortPoll = time.Second

// shortPending reports whether records were sent to fewer than k-1
// replicas since the last round that found k-1 for every range.
func (r *Replicator) shortPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shortPendingLocked()
}

func (r *Replicator) shortPendingLocked() bool { return r.shortDone < r.st.Push.Short }

// listsName reports whether the successor list of every local virtual
// server with a known range names k-1 real nodes other than this one: a
// round would then reach k-1 replicas of each range (replicasOf takes
// them from the list) and end the wait of shortPending.
func (r *Replicator) listsName(vs []ring.VnodeStatus) bool {
	return !slices.ContainsFunc(vs, func(v ring.VnodeStatus) bool {
		return v.Range.Known && len(r.listReplicas(v)) < r.k()-1
	})
}

func (r *Replicator) fail(err error) error {
	r.mu.Lock()
	r.st.Errors++
	r.lastErr = err
	r.mu.Unlock()
	return err
}

func (r *Replicator) record(st replicate.Stats) {
	r.mu.Lock()
	r.st.Syncs.Add(st)
	r.mu.Unlock()
}

// round syncs every known local range with its replicas, both ways, and
// records each range's health (health.go).
func (r *Replicator) round(ctx context.Context) error {
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
	if reason := r.paused(); reason != "" {
		return fmt.Errorf("replication round skipped: %s", reason)
	}
	var errs []error
	pairs := 0
	r.mu.Lock()
	short := r.st.Push.Short // read before the lists: a later short dispatch stays pending
	r.mu.Unlock()
	rs := r.cfg.Ring.Status()
	vs := rs.Vnodes
	now := r.owned.clock()
	r.owned.observeStatus(rs, now)
	if r.cfg.OwnedFile != "" {
		if err := r.owned.save(r.cfg.OwnedFile, now); err != nil {
			r.fail(err)
		}
	}
	// A replica the ring suspects of having failed is not asked (the
	// call would wait for its timeout): its copies are not counted.
	suspect := map[string]bool{}
	for _, p := range rs.Suspects {
		suspect[p] = true
	}
	r.purgeRound(ctx, vs)
	r.handOffRound(ctx)
	seen := map[id.ID]rangeCheck{}
	for _, v := range vs {
		if !v.Range.Known {
			continue
		}
		reps := r.replicasOf(ctx, v)
		chk := rangeCheck{replicas: len(reps), want: r.k() - 1, inSync: true}
		for _, c := range reps {
			if suspect[c.Peer] {
				chk.add(pairCheck{lacking: -1})
				continue
			}
			pairs++
			pctx, cancel := r.whileTrusted(ctx, c.Peer)
			p, err := r.syncPair(pctx, v, c)
			cancel()
			if err != nil {
				errs = append(errs, r.fail(err))
				p = pairCheck{lacking: -1}
			}
			chk.add(p)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if chk.replicas < chk.want || chk.unknown {
			// Too few replicas, or one did not answer: every version of
			// the range may lack a copy.
			if sum, err := r.cfg.Source.RangeSum(ctx, v.Range.Start, v.Range.End); err == nil {
				chk.belowK = sum.Count
			}
		}
		seen[v.ID] = chk
	}
	r.mu.Lock()
	if !slices.ContainsFunc(vs, func(v ring.VnodeStatus) bool { return seen[v.ID].replicas < seen[v.ID].want }) {
		r.shortDone = short // every range reached k-1 replicas
	}
	r.st.Rounds++
	r.st.Pairs += int64(pairs)
	r.health.update(seen, time.Now())
	r.mu.Unlock()
	return errors.Join(errs...)
}

// suspectPoll is how often whileTrusted asks the ring whether it suspects
// the replica being synced.
const suspectPoll = 500 * time.Millisecond

// whileTrusted returns a context that ends with ctx or as soon as the ring
// suspects peer of having failed: a sync with a replica that dies during
// a round then ends at once instead of waiting for its connection's
// timeout, and the round's health counts the replica's copies as missing.
func (r *Replicator) whileTrusted(ctx context.Context, peer string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(suspectPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if slices.Contains(r.cfg.Ring.Status().Suspects, peer) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// syncPair pulls v's range from replica c, then, unless the two sums of
// the range were equal, counts the versions c lacks (our count after the
// pull less c's: one more round trip) and asks c to pull the range from
// us. In sync, a pair thus costs one round trip.
func (r *Replicator) syncPair(ctx context.Context, v ring.VnodeStatus, c ring.Contact) (pairCheck, error) {
	a, b := v.Range.Start, v.Range.End
	// Records c fetched while this node was crawling their URLs wait in
	// the held area for its own fetch (guard.go).
	local := r.guarded(c)
	st, err := replicate.Sync(ctx, local, r.client(c), a, b, r.guardOptions(local))
	r.guardDone(ctx, local)
	r.record(st)
	if err != nil {
		return pairCheck{}, fmt.Errorf("replicate %s from %s: %w", v.Node, c.Addr, err)
	}
	if st.InSync == 1 {
		return pairCheck{inSync: true}, nil // equal sums: c holds exactly what we hold
	}
	cl := r.client(c)
	p := pairCheck{lacking: -1}
	if theirs, err := cl.RangeSum(ctx, a, b); err == nil {
		if ours, err := r.cfg.Source.RangeSum(ctx, a, b); err == nil {
			p.lacking = max(0, ours.Count-theirs.Count)
		}
	}
	err = cl.Pull(ctx, a, b, replicate.Contact{Peer: r.cfg.Self.Peer, Addr: r.cfg.Self.Addr, Index: v.Index})
	r.record(replicate.Stats{Traffic: cl.Traffic()})
	if err != nil {
		return p, fmt.Errorf("replicate %s to %s: %w", v.Node, c.Addr, err)
	}
	return p, nil
}

// replicasOf returns the real nodes that hold replicas of v's range: the
// first k-1 distinct real nodes other than this one on v's successor list,
// or, if that list is too short to name them, as the ring finds them.
func (r *Replicator) replicasOf(ctx context.Context, v ring.VnodeStatus) []ring.Contact {
	out := r.listReplicas(v)
	if len(out) == r.k()-1 || len(v.Successors) < ring.DefaultSuccessorListLen {
		return out // or the list holds the whole ring: there are no more nodes
	}
	succs, err := r.cfg.Ring.Successors(ctx, v.ID, r.k())
	if err != nil {
		r.fail(fmt.Errorf("replicas of %s: %w", v.Node, err))
		return out
	}
	out = out[:0]
	for _, s := range succs {
		if s.Peer != r.self() {
			out = append(out, s.Contact)
		}
	}
	return out
}

// listReplicas returns the first k-1 distinct real nodes other than this
// one on v's successor list (fewer if it names fewer).
func (r *Replicator) listReplicas(v ring.VnodeStatus) []ring.Contact {
	seen := map[string]bool{r.self(): true}
	var out []ring.Contact
	for _, s := range v.Successors {
		if len(out) == r.k()-1 {
			break
		}
		if !seen[s.Peer] {
			seen[s.Peer] = true
			out = append(out, s.Contact)
		}
	}
	return out
}

// client returns a replicate client whose requests go to c, and which
// fetches the dictionaries of c's records from c (dict.go).
func (r *Replicator) client(c ring.Contact) *replicate.Client {
	return replicate.NewClient(replicate.RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		return r.roundTrip(ctx, c, req)
	})).WithDictionaries(func(ctx context.Context, ref archive.DictRef) ([]byte, error) {
		return r.fetchDict(ctx, c, ref)
	})
}

// roundTrip sends one replicate request to c and reads its reply.
func (r *Replicator) roundTrip(ctx context.Context, c ring.Contact, req []byte) ([]byte, error) {
	s, err := r.cfg.Open(ctx, c, Protocol)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Reset() }) // cancellation ends a wait for the reply
	defer stop()
	var w io.Writer = s
	if len(req) > replicate.MaxRequest && r.cfg.WriteReply != nil {
		w = r.cfg.WriteReply(s, len(req)) // an offer carrying records: the replication caps
	}
	if err := wire.WriteFrame(w, req); err != nil {
		s.Reset()
		return nil, fmt.Errorf("replicate request: %w", err)
	}
	_ = s.CloseWrite()
	var in io.Reader = s
	if r.cfg.ReadReply != nil {
		in = r.cfg.ReadReply(ctx, s)
	}
	rep, err := wire.ReadFrame(bufio.NewReader(in), replicate.MaxReply)
	if err != nil {
		s.Reset()
		return nil, fmt.Errorf("replicate reply: %w", err)
	}
	return rep, nil
}

// Handle answers one replicate request from another node: the stream
// handler of Protocol. A pull request is verified (see accept) and
// queued for Work.
func (r *Replicator) Handle(s network.Stream) {
	defer s.Close()
	m, ok := r.cfg.Gate(s)
	if !ok {
		return
	}
	_ = s.SetDeadline(time.Now().Add(streamTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	// An offer may carry its records (OpOfferStored): the request is read
	// through the replication caps, as a pulled reply is.
	var in io.Reader = s
	if r.cfg.ReadReply != nil {
		in = r.cfg.ReadReply(ctx, s)
	}
	req, err := wire.ReadFrame(bufio.NewReader(in), replicate.MaxOfferRequest)
	if err != nil {
		r.badFrame()
		s.Reset()
		return
	}
	srv := replicate.Server{
		Source: r.cfg.Source, Budget: r.cfg.ReplyBudget,
		Pull:  func(ctx context.Context, q replicate.Request) error { return r.accept(ctx, m, q) },
		Offer: func(ctx context.Context, q replicate.Request) error { return r.acceptOffer(ctx, m, q) },
		HandOff: func(ctx context.Context, q replicate.Request) error {
			return r.acceptHandOff(ctx, m, q)
		},
	}
	rep, release, err := srv.HandleHeld(ctx, req)
	defer release() // once the reply is written
	if errors.Is(err, replicate.ErrProtocol) {
		r.badFrame()
	}
	var w io.Writer = s
	if r.cfg.WriteReply != nil {
		w = r.cfg.WriteReply(s, len(rep))
	}
	if err := wire.WriteFrame(w, rep); err != nil {
		s.Reset()
	}
}

// accept verifies a pull request from member m (verifyOwner) and queues
// it.
func (r *Replicator) accept(ctx context.Context, m ring.Node, q replicate.Request) error {
	from, err := r.verifyOwner(ctx, m, q)
	if err != nil {
		return err
	}
	job := pullJob{a: q.A, b: q.B, from: from.Contact}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queued[job] {
		return nil
	}
	select {
	case r.jobs <- job:
		r.queued[job] = true
		r.st.PullRequests++
		return nil
	default:
		r.st.Dropped++
		return errors.New("pull queue full")
	}
}

// verifyOwner verifies a pull request or an offer from member m and
// returns the owner it names. The rule:
// the request names m's own verified contact and one of its virtual
// servers B (its id derives from m's address and the index); (A, B] is
// B's range or a part of it (no virtual server lies between A and B by
// this node's ring, so A == B, the whole ring, never passes); and this
// node is one of the k-1 real nodes that replicate B's
// range. An owner can thus make its replicas copy files from it, which
// Import verifies, only for the range it owns and only on the nodes that
// hold its replicas. Refusals are counted in Stats.Refused.
func (r *Replicator) verifyOwner(ctx context.Context, m ring.Node, q replicate.Request) (ring.Node, error) {
	from := ring.Node{ID: q.B, Contact: ring.Contact{Peer: q.From.Peer, Addr: q.From.Addr}, Index: q.From.Index}
	err := ring.CheckID(from, ring.DefaultMaxVirtualServers)
	if err == nil && (from.Peer != m.Peer || from.Addr != m.Addr) {
		err = fmt.Errorf("%w: %s for %s sent by member %s", ErrRole, opName(q.Op), from.Contact, m.Contact)
	}
	from.Contact = m.Contact // with its relay, if it has one
	if err == nil {
		err = r.pullRole(ctx, q.A, from)
	}
	if err != nil {
		r.mu.Lock()
		r.st.Refused++
		r.mu.Unlock()
		if errors.Is(err, ErrRole) && r.cfg.RefuseRole != nil {
			r.cfg.RefuseRole(m, string(Protocol), err)
		}
		return ring.Node{}, fmt.Errorf("%s refused: %w", opName(q.Op), err)
	}
	r.noteRange(q.A, from.ID)
	return from, nil
}

// opName names a request in refusals.
func opName(op replicate.Op) string {
	if op == replicate.OpOffer {
		return "offer"
	}
	return "pull request"
}

// Work serves queued pull requests one at a time, until ctx ends.
func (r *Replicator) Work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-r.jobs:
			r.mu.Lock()
			delete(r.queued, job)
			r.busy++
			r.mu.Unlock()
			if reason := r.paused(); reason != "" {
				// Dropped: the owner asks again in a later round.
				r.mu.Lock()
				r.busy--
				r.mu.Unlock()
				continue
			}
			st, err := replicate.Sync(ctx, r.cfg.Local, r.client(job.from), job.a, job.b, r.syncOptions())
			r.record(st)
			if err != nil && ctx.Err() == nil {
				r.fail(fmt.Errorf("replicate (%s, %s] from %s: %w", job.a.Short(), job.b.Short(), job.from.Addr, err))
			}
			r.mu.Lock()
			r.busy--
			r.mu.Unlock()
		}
	}
}

// pullRole checks that (a, from.ID] lies in the range of from's virtual
// server and that this node replicates that range: the owner of a+1 must
// be from itself, and this node one of the next k-1
// distinct real nodes (ring.Ring.Successors). An error that does not wrap
// ErrRole means the ring could not tell (a lookup failed): the owner asks
// again next round. A check that passed is trusted for roleTTL
// (rolecache.go); refusals are checked every time.
func (r *Replicator) pullRole(ctx context.Context, a id.ID, from ring.Node) error {
	if a == from.ID {
		return fmt.Errorf("%w: (%s, %s] is the whole ring", ErrRole, a.Short(), from.ID.Short())
	}
	key, now := roleKey{a: a, from: from.ID, c: from.Contact}, r.roles.clock()
	if r.roles.valid(key, now) {
		return nil
	}
	if err := r.checkRole(ctx, a, from); err != nil {
		return err
	}
	r.roles.add(key, now)
	return nil
}

// checkRole is pullRole's check, asked of the ring.
func (r *Replicator) checkRole(ctx context.Context, a id.ID, from ring.Node) error {
	succs, err := r.successors(ctx, a.AddPow2(0), r.k())
	if err != nil {
		return fmt.Errorf("pull request: check range: %w", err)
	}
	if len(succs) == 0 || succs[0].ID != from.ID || succs[0].Contact != from.Contact {
		return fmt.Errorf("%w: (%s, %s] is not %s's range", ErrRole, a.Short(), from.ID.Short(), from)
	}
	for _, s := range succs[1:] {
		if s.Peer == r.self() {
			return nil
		}
	}
	return fmt.Errorf("%w: this node does not replicate %s's range", ErrRole, from)
}

// successors is the ring's Successors.
func (r *Replicator) successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error) {
	return r.cfg.Ring.Successors(ctx, key, k)
}

// k is the replication factor.
func (r *Replicator) k() int { return r.cfg.K }

// self is this node's peer id.
func (r *Replicator) self() string { return r.cfg.Self.Peer }

func (r *Replicator) badFrame() {
	if r.cfg.BadFrame != nil {
		r.cfg.BadFrame()
	}
}

// paused returns Config.Paused's reason, "" when the node stores.
func (r *Replicator) paused() string {
	if r.cfg.Paused == nil {
		return ""
	}
	return r.cfg.Paused()
}
