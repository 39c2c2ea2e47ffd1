package query

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Rows of other members. A ring-wide listing (op "list" and "page") is
// believed row by row, as a gateway read is: each row travels with a
// Proof, its fetcher's signature and the witness statements its member
// holds, and the asking node lists it only when
//
//   - the signature verifies (archive.Store.VerifySigned: by the key of
//     the row's fetcher, a peer not purged here, a capture time not in
//     the future, the ring key and day following from the URL and time);
//   - the version is shown here as of its date (the witness rule,
//     archive.WitnessRule.Date): this node fetched it, it is recent, a
//     statement the member sent vouches for it, or, failing those, the
//     version's holders vouch for it (Service.Dated);
//   - the member that listed it holds its URL, or a member that does, or
//     this node, lists it too (holders.go).
//
// A row that fails is dropped and counted (Service.Unverified); a member
// that sends no proof, or one proof too few, breaks the protocol.

// Proof is what a member sends with each row of a listing: the
// signature the row's fetcher (Version.Peer) made of its URL, time and
// payload digest, and the witness statements the member holds about it.
type Proof struct {
	Sig       []byte            `json:"sig,omitempty"`
	Witnesses []archive.Witness `json:"witnesses,omitempty"`
}

// maxProofWitnesses bounds the statements a member sends, and the asker
// checks, per row: a store keeps at most 8.
const maxProofWitnesses = 8

// proofOf returns the local version v, its fetcher filled in from its
// record when the index lacks it, and its proof.
func (svc *Service) proofOf(ctx context.Context, v archive.Version) (archive.Version, Proof, error) {
	peer, sig, err := svc.Store.Provenance(ctx, v)
	if err != nil {
		return v, Proof{}, err
	}
	if v.Peer == "" {
		v.Peer = peer
	}
	ws, err := svc.Store.Witnesses(ctx, v)
	if err != nil {
		return v, Proof{}, err
	}
	return v, Proof{Sig: sig, Witnesses: ws[:min(len(ws), maxProofWitnesses)]}, nil
}

// proofs returns the proofs of local versions vs, filling in their
// fetchers.
func (svc *Service) proofs(ctx context.Context, vs []archive.Version) ([]Proof, error) {
	out := make([]Proof, len(vs))
	for i := range vs {
		var err error
		if vs[i], out[i], err = svc.proofOf(ctx, vs[i]); err != nil {
			return nil, fmt.Errorf("proof of %.100q: %w", vs[i].URL, err)
		}
	}
	return out, nil
}

// A listed row's fate (judge).
const (
	rowDropped = iota // failed verification: counted
	rowKept           // listed
	rowCopy           // another copy of a version listed from elsewhere
	rowNotHeld        // listed by members none of which holds its URL: counted (holders.go)
)

// maxGroupWitnesses bounds the statements judged for one version, all
// its copies together.
const maxGroupWitnesses = 16

// judge decides the fate of every row members listed for one request:
// vs[i] with proof ps[i], listed by the member whose peer id is by[i],
// or, with ps[i] nil, a row of this node's own store (already shown by
// it: rowKept). The copies of one version (URL, time, payload digest)
// that several members list are judged together: this node's own copy,
// else the first copy of a member that holds the URL (holders.go) whose
// signature verifies, is kept and the others are copies, not checked
// (when no holder lists the version, all are rowNotHeld; when no
// holder's copy verifies, all are dropped);
// its date is judged by the statements all copies came with, and, for
// versions those do not date, by their holders (Dated, one batch). With
// vouch it returns, for each kept row, the statements that vouch for its
// date (this node's own are the caller's to add). Dropped rows are
// counted. The error, when the holders of a URL could not be found,
// fails the whole answer: no fate is given.
func (svc *Service) judge(ctx context.Context, vs []archive.Version, ps []*Proof, by []string, vouch bool) ([]int, [][]archive.Witness, error) {
	fate := make([]int, len(vs))
	good := make([][]archive.Witness, len(vs))
	groups := map[witnessKey]*rowGroup{}
	var order []*rowGroup
	for i, v := range vs {
		k := witnessKey{url: v.URL, time: v.Time.UnixNano(), digest: v.Digest}
		g := groups[k]
		if g == nil {
			g = &rowGroup{}
			groups[k] = g
			order = append(order, g)
		}
		g.rows = append(g.rows, i)
		if ps[i] != nil {
			for _, w := range ps[i].Witnesses[:min(len(ps[i].Witnesses), maxProofWitnesses)] {
				if len(g.ws) < maxGroupWitnesses && !slices.ContainsFunc(g.ws, func(x archive.Witness) bool { return x.Peer == w.Peer }) {
					g.ws = append(g.ws, w)
				}
			}
		}
	}
	held, err := svc.heldRows(ctx, vs, ps, by, order)
	if err != nil {
		return nil, nil, err
	}
	rule := svc.Store.Rule(nil)
	now := svc.now()
	// Each group is judged on its own, the groups spread over the CPUs:
	// signatures and statements are most of a listing's cost.
	type verdict struct {
		kept  int // -1: none
		shown bool
	}
	verdicts := make([]verdict, len(order))
	judgeGroup := func(gi int) {
		g := order[gi]
		vd := verdict{kept: -1}
		for _, i := range g.rows {
			if ps[i] == nil {
				vd.kept = i
				break
			}
		}
		for _, i := range g.rows {
			if vd.kept >= 0 {
				break
			}
			if held[i] && svc.Store.VerifySigned(vs[i], ps[i].Sig) == nil {
				vd.kept = i
			}
		}
		if vd.kept < 0 {
			verdicts[gi] = vd
			return
		}
		v := vs[vd.kept]
		d, _ := rule.Date(v, nil, now) // fetched here, or too recent to judge
		switch {
		case vouch:
			var ws []archive.Witness
			d, ws = rule.Date(v, g.ws, now)
			good[vd.kept] = ws
		case ps[vd.kept] != nil && !d.Shown():
			// The first statement that vouches for the date will do.
			for _, w := range g.ws {
				if d, _ = rule.Date(v, []archive.Witness{w}, now); d.Shown() {
					break
				}
			}
		}
		vd.shown = ps[vd.kept] == nil || d.Shown()
		verdicts[gi] = vd
	}
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(order))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for gi := w; gi < len(order); gi += workers {
				judgeGroup(gi)
			}
		}()
	}
	wg.Wait()
	var ask []int // kept rows no statement dates
	for gi, g := range order {
		vd := verdicts[gi]
		heldGroup := slices.ContainsFunc(g.rows, func(i int) bool { return held[i] })
		for _, i := range g.rows {
			switch {
			case i == vd.kept:
				fate[i] = rowKept
			case vd.kept >= 0 && ps[i] != nil:
				fate[i] = rowCopy // not checked: the version is listed once anyway
			case !heldGroup:
				fate[i] = rowNotHeld
			default:
				fate[i] = rowDropped
			}
		}
		if vd.kept >= 0 && !vd.shown {
			ask = append(ask, vd.kept)
		}
	}
	if len(ask) > 0 {
		var ds []archive.Dating
		if svc.Dated != nil {
			q := make([]archive.Version, len(ask))
			for j, i := range ask {
				q[j] = vs[i]
			}
			ds = svc.Dated(ctx, q)
		}
		for j, i := range ask {
			if j >= len(ds) || !ds[j].Shown() {
				fate[i] = rowDropped
			}
		}
	}
	if dropped := countFate(fate, rowDropped); dropped > 0 {
		svc.unverified.Add(int64(dropped))
		svc.Log().Warn("query: listed rows failed verification", "rows", len(vs), "dropped", dropped)
	}
	if n := countFate(fate, rowNotHeld); n > 0 {
		svc.notHeld.Add(int64(n))
		svc.Log().Warn("query: listed rows of URLs their members do not hold, listed by no holder", "rows", len(vs), "dropped", n)
	}
	return fate, good, nil
}

// heldRows reports, for each row, whether it may be kept as far as its
// lister goes: this node's own row (ps[i] nil), or one of a member that
// holds its URL (holders.go). Only versions this node does not list
// itself are looked up, in key order, so that one answer serves the
// keys of its owner's range.
func (svc *Service) heldRows(ctx context.Context, vs []archive.Version, ps []*Proof, by []string, order []*rowGroup) ([]bool, error) {
	held := make([]bool, len(vs))
	type keyed struct {
		key id.ID
		g   *rowGroup
	}
	var ask []keyed
	for _, g := range order {
		if slices.ContainsFunc(g.rows, func(i int) bool { return ps[i] == nil }) {
			for _, i := range g.rows {
				held[i] = true
			}
			continue
		}
		ask = append(ask, keyed{id.OfString(vs[g.rows[0]].URL), g})
	}
	if len(ask) == 0 {
		return held, nil
	}
	slices.SortFunc(ask, func(a, b keyed) int { return a.key.Cmp(b.key) })
	view := svc.holderView()
	for _, a := range ask {
		g := a.g
		var errs []error
		for _, i := range g.rows {
			ok, err := view.holds(ctx, by[i], a.key)
			held[i] = ok
			if err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 && !slices.ContainsFunc(g.rows, func(i int) bool { return held[i] }) {
			// Whether its listers hold it is unknown: fail rather than
			// drop a row a holder may have listed.
			return nil, fmt.Errorf("%w: %w", ErrPartial, errs[0])
		}
	}
	return held, nil
}

// rowGroup is the rows of one version (judge): their indexes and the
// statements their proofs carried.
type rowGroup struct {
	rows []int
	ws   []archive.Witness
}

// witnessKey names a version across the members that list it.
type witnessKey struct {
	url    string
	time   int64
	digest id.ID
}

func countFate(fate []int, f int) int {
	n := 0
	for _, x := range fate {
		if x == f {
			n++
		}
	}
	return n
}

// now is the Service's clock.
func (svc *Service) now() time.Time {
	if svc.Now != nil {
		return svc.Now()
	}
	return time.Now()
}

// Unverified returns how many rows of other members' listings failed
// verification and were not listed.
func (svc *Service) Unverified() int64 { return svc.unverified.Load() }

// localWitnesses returns the statements this node holds that vouch for
// the local version v's date, earliest first.
func (svc *Service) localWitnesses(ctx context.Context, v archive.Version) ([]archive.Witness, error) {
	ws, err := svc.Store.Witnesses(ctx, v)
	if err != nil {
		return nil, err
	}
	_, good := svc.Store.Rule(nil).Date(v, ws, svc.now())
	return good, nil
}

// mergeWitnesses adds to a the statements of b by peers a lacks, earliest
// first.
func mergeWitnesses(a, b []archive.Witness) []archive.Witness {
	for _, w := range b {
		if !slices.ContainsFunc(a, func(x archive.Witness) bool { return x.Peer == w.Peer }) {
			a = append(a, w)
		}
	}
	slices.SortFunc(a, func(x, y archive.Witness) int { return x.Seen.Compare(y.Seen) })
	return a
}
