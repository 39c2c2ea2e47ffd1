package replication

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// Hand-offs: rounds compare each owner with its replicas only, and the
// push copies only what a node stores in its own ranges. A version stored
// by a node that is none of its key's k holders — its crawler fetched a
// URL its ring view could not place (a lookup that failed, a predecessor
// unknown for a moment), or it kept copies of a range whose role it lost —
// was copied by nothing: it stayed on that one node, and with it died.
// So a node hands such records to their owner (OpHandOff): the owner
// copies those it lacks, verified by Import as any copy, answers once it
// holds them, and pushes them to its replicas; rounds repair the rest.
// A node never deletes a record it handed off.
//
// Two paths find them:
//   - the push (dispatch): a record stored outside the node's own ranges
//     is handed to the owner the ring names, carried in the request, as
//     soon as it is queued;
//   - rounds (sweep): when a sweep is due — the first round, after a
//     change of the ring, after a hand-off failed or a record was
//     dropped — the node finds, between each two of its ranges, the part
//     of the ring it is no holder of (a few lookups), and lists its
//     records there (normally none), unless their sum is the one it last
//     handed off; hand-offs that failed are tried again at each round.

const (
	// maxForeign bounds the records remembered for a hand-off at the
	// next round; past it, the next round sweeps instead.
	maxForeign = pushQueueLen
	// maxSweepSteps bounds the lookups of one gap's search (nonHeldEnd).
	maxSweepSteps = 1024
	// maxHanded bounds the ranges whose handed-off sum is remembered.
	maxHanded = 4096
)

// HandOffStats counts hand-offs since New.
type HandOffStats struct {
	// Records counts the records this node handed to their owners and
	// the owners accepted (held until their own fetch confirms them, or
	// stored); Failed those whose hand-off failed (tried
	// again at the next round); Own those outside the node's known
	// ranges that the ring says it owns (its rounds copy them once the
	// range is known).
	Records int64 `json:"records"`
	Failed  int64 `json:"failed"`
	Own     int64 `json:"own"`
	// Sweeps counts the sweeps of the ring outside this node's ranges,
	// Found the records they found in ranges this node does not hold.
	Sweeps int64 `json:"sweeps"`
	Found  int64 `json:"found"`
	// Served counts hand-offs accepted from other members, Received what
	// copying them did, Taken the records this node stored from them and
	// queued for its push (released, or its own captures).
	Served   int64           `json:"served"`
	Received replicate.Stats `json:"received"`
	Taken    int64           `json:"taken"`
	// The hold (hold.go): Held is the records held now, waiting for this
	// node's own fetch to confirm their payload, and HeldBytes their
	// size; Holds counts the records ever held, Rechecks the URLs queued
	// for this node's fetch, Released the records confirmed and stored,
	// Expired those no own fetch confirmed within HoldLimits.For
	// (dropped), Dropped those the store refused once confirmed (a
	// fetcher purged since), Refused those refused for a full hold
	// (ErrHoldFull). Guarded counts the records held by rounds rather
	// than hand-offs: a replica's captures of URLs this node was crawling
	// at their capture time (guard.go; counted in Holds too).
	Held      int64 `json:"held"`
	HeldBytes int64 `json:"held_bytes"`
	Holds     int64 `json:"holds"`
	Rechecks  int64 `json:"rechecks"`
	Released  int64 `json:"released"`
	Expired   int64 `json:"expired"`
	Dropped   int64 `json:"dropped"`
	Refused   int64 `json:"refused"`
	Guarded   int64 `json:"guarded"`
}

// handOffState is what waits for a hand-off. Guarded by Replicator.mu.
type handOffState struct {
	pending map[archive.Entry]struct{} // hand-offs that failed: tried at the next round
	sweep   bool                       // a sweep is due
	running int                        // hand-offs the push started and that have not ended
	handed  map[[2]id.ID]archive.DirSum
}

// keepForeignLocked remembers es for a hand-off at the next round. The
// caller holds r.mu.
func (r *Replicator) keepForeignLocked(es []archive.Entry) {
	if len(es) == 0 {
		return
	}
	r.ho.handed = nil // a later sweep lists their ranges again, whatever pending keeps
	if r.ho.pending == nil {
		r.ho.pending = map[archive.Entry]struct{}{}
	}
	for _, e := range es {
		if len(r.ho.pending) >= maxForeign {
			r.ho.sweep = true // the sweep finds the rest
			return
		}
		r.ho.pending[e] = struct{}{}
	}
}

// handOffPushed hands the foreign records the push met to their owners,
// carried; what fails waits for the next round. It runs in its own
// goroutine; PushIdle is false until it ends.
func (r *Replicator) handOffPushed(ctx context.Context, es []archive.Entry) {
	left := r.handOff(ctx, es, true)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ho.running--
	r.keepForeignLocked(left)
	r.wakePush() // PushIdle may hold now
}

// handOffRound runs at the start of each round: the held records past
// their time are dropped, then the hand-offs that failed are tried again,
// and a sweep runs when one is due.
func (r *Replicator) handOffRound(ctx context.Context) {
	r.ExpireHeld(time.Now())
	r.mu.Lock()
	sweep := r.ho.sweep
	r.ho.sweep = false
	es := make([]archive.Entry, 0, len(r.ho.pending))
	for e := range r.ho.pending {
		es = append(es, e)
	}
	r.ho.pending = nil
	r.mu.Unlock()
	if sweep {
		found, done := r.sweepForeign(ctx)
		es = append(es, found...)
		if !done {
			r.mu.Lock()
			r.ho.sweep = true
			r.mu.Unlock()
		}
	}
	if len(es) == 0 {
		return
	}
	left := r.handOff(ctx, es, false)
	r.mu.Lock()
	r.keepForeignLocked(left)
	r.mu.Unlock()
}

// handOff hands es to their owners, MaxBatch records a request, the
// records carried when carry is set (names only otherwise: the owner
// reads those it lacks), and returns those not confirmed.
func (r *Replicator) handOff(ctx context.Context, es []archive.Entry, carry bool) (left []archive.Entry) {
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b archive.Entry) int { return a.Key.Cmp(b.Key) })
	es = slices.Compact(es)
	var errs []error
	var own, ok int64
	from := replicate.Contact{Peer: r.cfg.Self.Peer, Addr: r.cfg.Self.Addr}
	suspects := r.cfg.Ring.Status().Suspects // not asked: the call would wait for its timeout
	for i := 0; i < len(es); {
		succs, err := r.successors(ctx, es[i].Key, 1)
		if err == nil && len(succs) == 0 {
			err = errors.New("no owner")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("owner of %s: %w", es[i].Key.Short(), err))
			left = append(left, es[i:]...)
			break
		}
		owner := succs[0]
		j := i + 1 // es[i:j]: the records of owner's range
		for j < len(es) && id.InHalfOpen(es[j].Key, es[i].Key, owner.ID) {
			j++
		}
		group := es[i:j]
		i = j
		if owner.Peer == r.self() {
			own += int64(len(group)) // this node's range, not known here yet: its rounds copy it
			continue
		}
		if slices.Contains(suspects, owner.Peer) {
			left = append(left, group...) // the next round asks the ring again
			continue
		}
		cl := r.client(owner.Contact)
		for len(group) > 0 {
			n := min(len(group), replicate.MaxBatch)
			batch := group[:n]
			group = group[n:]
			carried := make([][]byte, n)
			if carry {
				carried = replicate.Carry(ctx, batch, r.cfg.Source.ReadStored)
			}
			if err := cl.HandOff(ctx, owner.ID, from, batch, carried); err != nil {
				errs = append(errs, fmt.Errorf("hand off to %s: %w", owner.Addr, err))
				left = append(left, batch...)
				continue
			}
			ok += int64(n)
		}
	}
	r.mu.Lock()
	r.st.HandOff.Records += ok
	r.st.HandOff.Failed += int64(len(left))
	r.st.HandOff.Own += own
	r.mu.Unlock()
	if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
		r.fail(err)
	}
	return left
}

// sweepForeign lists this node's records in the parts of the ring it
// holds no copies of by its role, skipping a range whose sum is the one
// last handed off. done is false when the walk could not finish (a range
// unknown, a failed lookup): the next round sweeps again.
//
// Between one of this node's ranges and the next (a gap), the ranges it
// holds as a replica are a suffix: a range held (this node among the k-1
// distinct real nodes after it) is followed, toward this node's next
// virtual server, only by held ranges, since fewer real nodes lie between
// them and this node. So each gap costs a search for the end of its
// non-held prefix (nonHeldEnd, O(log n) lookups) and a sum of that
// prefix, where this node normally holds nothing.
func (r *Replicator) sweepForeign(ctx context.Context) (found []archive.Entry, done bool) {
	vs := slices.Clone(r.cfg.Ring.Status().Vnodes)
	if len(vs) == 0 {
		return nil, true
	}
	for _, v := range vs {
		if !v.Range.Known {
			return nil, false
		}
	}
	slices.SortFunc(vs, func(a, b ring.VnodeStatus) int { return a.ID.Cmp(b.ID) })
	r.mu.Lock()
	r.st.HandOff.Sweeps++
	r.mu.Unlock()
	done = true
	for i, v := range vs {
		a, b := v.ID, vs[(i+1)%len(vs)].Range.Start // the gap (a, b] after v's range
		if a == b {
			continue
		}
		p, ok := r.nonHeldEnd(ctx, a, b)
		if !ok {
			return found, false
		}
		if p == a {
			continue
		}
		es, ok := r.foreignIn(ctx, a, p)
		found = append(found, es...)
		done = done && ok
	}
	r.mu.Lock()
	r.st.HandOff.Found += int64(len(found))
	r.mu.Unlock()
	return found, done
}

// nonHeldEnd returns p in [a, b] such that this node holds no copies of
// (a, p] by its role and holds those of (p, b], for a gap (a, b] between
// two of its ranges. Each step asks the ring for the holders of the key
// after lo (held: p is lo) and of the middle of (lo, hi] (not held: lo
// moves to the end of its owner's range; held: hi moves before it).
// ok is false when a lookup failed or the ring's views differ.
func (r *Replicator) nonHeldEnd(ctx context.Context, a, b id.ID) (p id.ID, ok bool) {
	lo, hi := a, b // (a, lo] not held; (hi, b] held
	holders := func(key id.ID) (owner ring.Node, held, ok bool) {
		succs, err := r.successors(ctx, key, r.k())
		if err != nil || len(succs) == 0 || succs[0].Peer == r.self() || !id.InHalfOpen(succs[0].ID, a, b) {
			return ring.Node{}, false, false
		}
		return succs[0], slices.ContainsFunc(succs, func(s ring.Node) bool { return s.Peer == r.self() }), true
	}
	for steps := 0; lo != hi; steps++ {
		if steps > maxSweepSteps || ctx.Err() != nil {
			return lo, false
		}
		o, held, ok := holders(lo.AddPow2(0))
		if !ok {
			return lo, false
		}
		if held {
			return lo, true
		}
		lo = o.ID
		if !id.InHalfOpen(lo, a, hi) {
			return hi, true // the views differ by less than a range: stop at hi
		}
		if lo == hi {
			break
		}
		mid := midpoint(lo, hi)
		o, held, ok = holders(mid)
		switch {
		case !ok:
			return lo, false
		case held:
			hi = before(mid)
		case id.InHalfOpen(o.ID, lo, hi):
			lo = o.ID
		default:
			lo = hi
		}
	}
	return lo, true
}

// midpoint returns the key halfway from lo to hi clockwise, in (lo, hi];
// lo != hi.
func midpoint(lo, hi id.ID) id.ID {
	d := id.Distance(lo, hi)
	d.Add(d, big.NewInt(1)).Rsh(d, 1)
	return id.FromBig(d.Add(d, new(big.Int).SetBytes(lo[:])))
}

// before returns x - 1 on the ring.
func before(x id.ID) id.ID {
	return id.FromBig(new(big.Int).Sub(new(big.Int).SetBytes(x[:]), big.NewInt(1)))
}

// foreignIn lists this node's records in (a, b], a range it is no holder
// of, unless their sum is the one last handed off from it; ok is false
// when the listing failed.
func (r *Replicator) foreignIn(ctx context.Context, a, b id.ID) ([]archive.Entry, bool) {
	sum, err := r.cfg.Source.RangeSum(ctx, a, b)
	if err != nil {
		return nil, false
	}
	key := [2]id.ID{a, b}
	r.mu.Lock()
	last, seen := r.ho.handed[key]
	r.mu.Unlock()
	if sum.Count == 0 || (seen && last == sum) {
		return nil, true
	}
	es, err := r.cfg.Source.EntriesUpTo(ctx, a, b, maxForeign)
	if err != nil {
		r.fail(fmt.Errorf("hand-off sweep of (%s, %s]: %w", a.Short(), b.Short(), err))
		return nil, false
	}
	r.mu.Lock()
	if r.ho.handed == nil || len(r.ho.handed) >= maxHanded {
		r.ho.handed = map[[2]id.ID]archive.DirSum{}
	}
	r.ho.handed[key] = sum // if the hand-off fails, pending carries them
	r.mu.Unlock()
	return es, true
}

// acceptHandOff serves a hand-off from member m: m names itself, q.B is
// one of this node's virtual servers with a known range, and the records
// in that range are copied (carried, or read from m), verified as Import
// verifies and kept in the held area (hold.go) before the reply, which is
// an error unless every record is now held there or stored. A held
// record is not imported, shown, witnessed or pushed until this node's
// own fetch of its URL confirms its payload (Confirm): its URL is queued
// for that fetch (Config.Recheck). A record this node fetched itself is
// imported and queued for its push at once.
func (r *Replicator) acceptHandOff(ctx context.Context, m ring.Node, q replicate.Request) error {
	if reason := r.paused(); reason != "" {
		return fmt.Errorf("hand-off refused: %s", reason)
	}
	if q.From.Peer != m.Peer || q.From.Addr != m.Addr {
		err := fmt.Errorf("%w: hand-off for %s sent by member %s", ErrRole, q.From.Addr, m.Contact)
		r.mu.Lock()
		r.st.Refused++
		r.mu.Unlock()
		if r.cfg.RefuseRole != nil {
			r.cfg.RefuseRole(m, string(Protocol), err)
		}
		return err
	}
	vs := r.cfg.Ring.Status().Vnodes
	i := slices.IndexFunc(vs, func(v ring.VnodeStatus) bool { return v.ID == q.B && v.Range.Known })
	if i < 0 {
		// Not this node's range by its view (or not known yet): the
		// sender asks the ring again at its next round.
		return fmt.Errorf("hand-off refused: %s is no virtual server of this node with a known range", q.B.Short())
	}
	if r.cfg.Held == nil || r.cfg.Check == nil {
		return errors.New("hand-off refused: this node keeps no held area")
	}
	g := vs[i].Range
	hl := &holdingLocal{Local: r.cfg.Local, r: r, sender: m.Peer}
	peer := replicate.WithCarried(r.client(m.Contact), q)
	st, err := replicate.Copy(ctx, hl, peer, g.Start, g.End, q.Entries, r.syncOptions())
	urls := make([]string, 0, len(hl.fresh))
	for _, rec := range hl.fresh {
		urls = append(urls, rec.URL)
	}
	r.mu.Lock()
	r.st.HandOff.Served++
	r.st.HandOff.Received.Add(st)
	r.st.HandOff.Holds += int64(len(hl.fresh))
	r.st.HandOff.Refused += hl.refuse
	r.queueTakenLocked(hl.taken, time.Now())
	r.mu.Unlock()
	// Held records wait for this node's own fetch of their URLs.
	r.recheck(ctx, urls)
	if err == nil && st.Pulled+st.Present < int64(len(q.Entries)) {
		err = fmt.Errorf("%d of %d records not copied (%d outside the range or refused, %d unreadable)",
			int64(len(q.Entries))-st.Pulled-st.Present, len(q.Entries), st.Rejected, st.Failed)
	}
	if err != nil {
		return r.fail(fmt.Errorf("hand-off from %s: %w", m.Addr, err))
	}
	return nil
}
