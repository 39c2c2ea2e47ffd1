package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/throttle"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// Replication places every key on k = Config.Replicas real nodes: the
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

// replicateProtocol carries replicate's requests: one stream per request,
// one length-prefixed frame each way.
const replicateProtocol protocol.ID = "/herod/replicate/1.0.0"

// Replication defaults.
const (
	// ReplicationFactor is the default k (Config.Replicas): every key is held by its owner and by the
	// next k-1 distinct real nodes clockwise (skipping further virtual
	// servers of nodes already counted), so any k-1 real nodes may die at
	// once without losing a file.
	ReplicationFactor = 3
	// DefaultReplicationInterval is the period of replication rounds. A
	// round costs one round trip of 67 bytes per (range, replica) pair
	// when in sync, so the period bounds how stale a replica can be, not
	// the bandwidth. Tests shorten it with Node.SetReplicationInterval. The
	// first round runs one period after Start, once the ring has settled.
	DefaultReplicationInterval = 30 * time.Second
	// ReplicationSettle is how long after the last change of a local
	// virtual server's range or successors a round runs (if sooner than
	// the next periodic one): long enough for a failure's burst of ring
	// changes to end, short enough that lost copies are restored quickly.
	ReplicationSettle = time.Second
	// pullQueueLen bounds the pull requests a node has accepted and not
	// yet served; owners repeat theirs every round.
	pullQueueLen = 256
)

// replicator runs a node's replication: a loop that, every interval, pulls
// each of the node's ranges from its replicas and asks them to pull it from
// the node, and a worker that serves the pull requests other owners send.
type replicator struct {
	n        *Node
	interval atomic.Int64 // nanoseconds; <= 0 disables rounds
	kick     chan struct{}
	jobs     chan pullJob
	roundMu  sync.Mutex // one round at a time

	purgeMu     sync.Mutex                // guards purgeAgreed
	purgeAgreed map[string]purgeAgreement // by replica peer: purge.go

	// succs and selfPeer stand in for the node's ring in unit tests.
	succs    func(ctx context.Context, key id.ID, k int) ([]ring.Node, error)
	selfPeer string

	mu      sync.Mutex
	health  rangeHealth // per local range, from the last round
	queued  map[pullJob]bool
	busy    int // pull jobs being served
	st      ReplicationStats
	lastErr error
}

// pullJob is a range an owner asked this node to pull from it.
type pullJob struct {
	a, b id.ID
	from ring.Contact
}

// ReplicationStats counts a node's replication work since New.
type ReplicationStats struct {
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
	Health ReplicationHealth `json:"health"`
}

// setupReplication registers the replication protocol handler. Called
// from New; the loop starts with startReplication.
func (n *Node) setupReplication() {
	n.repl = newReplicator(n)
	n.host.SetStreamHandler(replicateProtocol, n.repl.handle)
}

// startReplication launches the round loop and the pull worker. Called
// from Start.
func (n *Node) startReplication() {
	r := n.replicator()
	sub := n.ring.Subscribe(64)
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		defer sub.Unsubscribe()
		r.loop(n.ctx, sub.C)
	}()
	go func() {
		defer n.wg.Done()
		r.work(n.ctx)
	}()
}

// replicator returns n's replication state, set up by New.
func (n *Node) replicator() *replicator { return n.repl }

func newReplicator(n *Node) *replicator {
	r := &replicator{
		n: n, kick: make(chan struct{}, 1), jobs: make(chan pullJob, pullQueueLen),
		queued: map[pullJob]bool{}, purgeAgreed: map[string]purgeAgreement{},
	}
	r.interval.Store(int64(n.cfg.ReplicationInterval))
	return r
}

// SetReplicationInterval sets the period of replication rounds, effective
// at once; d <= 0 stops rounds (pull requests from owners are still served).
func (n *Node) SetReplicationInterval(d time.Duration) {
	r := n.replicator()
	r.interval.Store(int64(d))
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// ReplicationStats returns a snapshot of the replication counters.
func (n *Node) ReplicationStats() ReplicationStats {
	r := n.replicator()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Interval = time.Duration(r.interval.Load())
	st.Health = r.health.snapshot(time.Now())
	if r.lastErr != nil {
		st.LastError = r.lastErr.Error()
	}
	return st
}

// ReplicationIdle reports whether no pull request is queued or being served.
func (n *Node) ReplicationIdle() bool {
	r := n.replicator()
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queued) == 0 && r.busy == 0
}

// Replicate runs one replication round now (waiting for a running one to
// finish first) and returns the first error it met; the round goes on past
// errors, which the stats count.
func (n *Node) Replicate(ctx context.Context) error { return n.replicator().round(ctx) }

// loop runs a round every interval, and also ReplicationSettle after the
// last of a burst of ring changes (a range or successor list of a local
// virtual server changed), so that the copies a failure took away are
// restored within seconds rather than a period.
//
// Changes before the first periodic round are ignored: the first round
// waits a whole interval after Start, while the node joins and the ring
// settles.
func (r *replicator) loop(ctx context.Context, events <-chan ring.Event) {
	changed, ran := false, false
	for {
		var tick <-chan time.Time
		var t *time.Timer
		if d := time.Duration(r.interval.Load()); d > 0 {
			if changed {
				d = min(d, ReplicationSettle)
			}
			t = time.NewTimer(d)
			tick = t.C
		}
		var fire bool
		select {
		case <-ctx.Done():
		case <-r.kick: // the interval changed: restart the timer
		case _, ok := <-events:
			if !ok {
				events = nil // the ring closed
			}
			changed = ok && ran // wait for the ring to settle, then sync
		case <-tick:
			fire = true
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if !fire {
			continue
		}
		changed, ran = false, true
		if err := r.round(ctx); err != nil && ctx.Err() == nil {
			r.n.log.Debug("replication round", "err", err)
		}
	}
}

func (r *replicator) fail(err error) error {
	r.mu.Lock()
	r.st.Errors++
	r.lastErr = err
	r.mu.Unlock()
	return err
}

func (r *replicator) record(st replicate.Stats) {
	r.mu.Lock()
	r.st.Syncs.Add(st)
	r.mu.Unlock()
}

// round syncs every known local range with its replicas, both ways, and
// records each range's health (health.go).
func (r *replicator) round(ctx context.Context) error {
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
	n := r.n
	var errs []error
	pairs := 0
	vs := n.ring.Status().Vnodes
	r.purgeRound(ctx, vs)
	seen := map[id.ID]rangeCheck{}
	for _, v := range vs {
		if !v.Range.Known {
			continue
		}
		reps := r.replicasOf(ctx, v)
		chk := rangeCheck{replicas: len(reps), want: r.k() - 1, inSync: true}
		for _, c := range reps {
			pairs++
			p, err := r.syncPair(ctx, v, c)
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
			if sum, err := n.store.RangeSum(ctx, v.Range.Start, v.Range.End); err == nil {
				chk.belowK = sum.Count
			}
		}
		seen[v.ID] = chk
	}
	r.mu.Lock()
	r.st.Rounds++
	r.st.Pairs += int64(pairs)
	r.health.update(seen, time.Now())
	r.mu.Unlock()
	return errors.Join(errs...)
}

// syncPair pulls v's range from replica c, then, unless the two sums of
// the range were equal, counts the versions c lacks (our count after the
// pull less c's: one more round trip) and asks c to pull the range from
// us. In sync, a pair thus costs one round trip.
func (r *replicator) syncPair(ctx context.Context, v ring.VnodeStatus, c ring.Contact) (pairCheck, error) {
	n := r.n
	a, b := v.Range.Start, v.Range.End
	st, err := replicate.Sync(ctx, n.replicaStore(), r.client(c), a, b, replicate.Options{})
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
		if ours, err := n.store.RangeSum(ctx, a, b); err == nil {
			p.lacking = max(0, ours.Count-theirs.Count)
		}
	}
	err = cl.Pull(ctx, a, b, replicate.Contact{Peer: n.self.Peer, Addr: n.self.Addr, Index: v.Index})
	r.record(replicate.Stats{Traffic: cl.Traffic()})
	if err != nil {
		return p, fmt.Errorf("replicate %s to %s: %w", v.Node, c.Addr, err)
	}
	return p, nil
}

// replicasOf returns the real nodes that hold replicas of v's range: the
// first k-1 distinct real nodes other than this one on v's successor list,
// or, if that list is too short to name them, as the ring finds them.
func (r *replicator) replicasOf(ctx context.Context, v ring.VnodeStatus) []ring.Contact {
	self := r.n.self.Peer
	seen := map[string]bool{self: true}
	var out []ring.Contact
	for _, s := range v.Successors {
		if !seen[s.Peer] {
			seen[s.Peer] = true
			out = append(out, s.Contact)
			if len(out) == r.k()-1 {
				return out
			}
		}
	}
	if len(v.Successors) < ring.DefaultSuccessorListLen {
		return out // the list holds the whole ring: there are no more nodes
	}
	succs, err := r.n.ring.Successors(ctx, v.ID, r.k())
	if err != nil {
		r.fail(fmt.Errorf("replicas of %s: %w", v.Node, err))
		return out
	}
	out = out[:0]
	for _, s := range succs {
		if s.Peer != self {
			out = append(out, s.Contact)
		}
	}
	return out
}

// client returns a replicate client whose requests go to c.
func (r *replicator) client(c ring.Contact) *replicate.Client {
	return replicate.NewClient(replicate.RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		return r.n.roundTrip(ctx, c, req)
	}))
}

// roundTrip sends one replicate request to c and reads its reply.
func (n *Node) roundTrip(ctx context.Context, c ring.Contact, req []byte) ([]byte, error) {
	s, err := n.openStream(ctx, c, replicateProtocol)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Reset() }) // cancellation ends a wait for the reply
	defer stop()
	if err := wire.WriteFrame(s, req); err != nil {
		s.Reset()
		return nil, fmt.Errorf("replicate request: %w", err)
	}
	_ = s.CloseWrite()
	rep, err := wire.ReadFrame(bufio.NewReader(throttle.Reader(ctx, s, n.bw.replDown, n.bw.down)), replicate.MaxReply)
	if err != nil {
		s.Reset()
		return nil, fmt.Errorf("replicate reply: %w", err)
	}
	return rep, nil
}

// handle answers one replicate request from another node.
func (r *replicator) handle(s network.Stream) {
	defer s.Close()
	n := r.n
	m, ok := n.gate(s)
	if !ok {
		return
	}
	_ = s.SetDeadline(time.Now().Add(streamTimeout))
	req, err := wire.ReadFrame(bufio.NewReader(s), replicate.MaxRequest)
	if err != nil {
		n.counters.badFrames.Add(1)
		s.Reset()
		return
	}
	srv := replicate.Server{
		Source: n.store,
		Pull:   func(ctx context.Context, q replicate.Request) error { return r.accept(ctx, m, q) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	rep, err := srv.Handle(ctx, req)
	if errors.Is(err, replicate.ErrProtocol) {
		n.counters.badFrames.Add(1)
	}
	w := n.bw.replyWriter(s, len(rep))
	if err := wire.WriteFrame(w, rep); err != nil {
		s.Reset()
	}
}

// accept verifies a pull request from member m and queues it. The rule:
// the request names m's own verified contact and one of its virtual
// servers B (its id derives from m's address and the index); (A, B] is
// B's range or a part of it (no virtual server lies between A and B by
// this node's ring, so A == B, the whole ring, never passes); and this
// node is one of the ReplicationFactor-1 real nodes that replicate B's
// range. An owner can thus make its replicas copy files from it, which
// Import verifies, only for the range it owns and only on the nodes that
// hold its replicas.
func (r *replicator) accept(ctx context.Context, m ring.Node, q replicate.Request) error {
	from := ring.Node{ID: q.B, Contact: ring.Contact{Peer: q.From.Peer, Addr: q.From.Addr}, Index: q.From.Index}
	err := ring.CheckID(from, ring.DefaultMaxVirtualServers)
	if err == nil && (from.Peer != m.Peer || from.Addr != m.Addr) {
		err = fmt.Errorf("%w: pull request for %s sent by member %s", errRole, from.Contact, m.Contact)
	}
	from.Contact = m.Contact // with its relay, if it has one
	if err == nil {
		err = r.pullRole(ctx, q.A, from)
	}
	if err != nil {
		r.mu.Lock()
		r.st.Refused++
		r.mu.Unlock()
		if errors.Is(err, errRole) && r.n != nil {
			r.n.refuseRole(m, string(replicateProtocol), err)
		}
		return fmt.Errorf("pull request refused: %w", err)
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

// work serves queued pull requests one at a time.
func (r *replicator) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-r.jobs:
			r.mu.Lock()
			delete(r.queued, job)
			r.busy++
			r.mu.Unlock()
			st, err := replicate.Sync(ctx, r.n.replicaStore(), r.client(job.from), job.a, job.b, replicate.Options{})
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
// errRole means the ring could not tell (a lookup failed): the owner asks
// again next round.
func (r *replicator) pullRole(ctx context.Context, a id.ID, from ring.Node) error {
	if a == from.ID {
		return fmt.Errorf("%w: (%s, %s] is the whole ring", errRole, a.Short(), from.ID.Short())
	}
	succs, err := r.successors(ctx, a.AddPow2(0), r.k())
	if err != nil {
		return fmt.Errorf("pull request: check range: %w", err)
	}
	if len(succs) == 0 || succs[0].ID != from.ID || succs[0].Contact != from.Contact {
		return fmt.Errorf("%w: (%s, %s] is not %s's range", errRole, a.Short(), from.ID.Short(), from)
	}
	for _, s := range succs[1:] {
		if s.Peer == r.self() {
			return nil
		}
	}
	return fmt.Errorf("%w: this node does not replicate %s's range", errRole, from)
}

// successors is the ring's Successors; tests replace it.
func (r *replicator) successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error) {
	if r.succs != nil {
		return r.succs(ctx, key, k)
	}
	return r.n.ring.Successors(ctx, key, k)
}

// k is the replication factor: Config.Replicas (ReplicationFactor in
// unit tests without a node).
func (r *replicator) k() int {
	if r.n == nil {
		return ReplicationFactor
	}
	return r.n.cfg.Replicas
}

// self is this node's peer id.
func (r *replicator) self() string {
	if r.n == nil {
		return r.selfPeer
	}
	return r.n.self.Peer
}
