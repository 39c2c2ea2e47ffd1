package query

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
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
//     version's holders vouch for it (Service.Dated).
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

// verified returns, for each row vs[i] a member listed with proof ps[i],
// whether it is listed (see above) and, if so, the statements that vouch
// for its date, earliest first. Every row dropped is counted.
func (svc *Service) verified(ctx context.Context, vs []archive.Version, ps []Proof) ([]bool, [][]archive.Witness) {
	ok := make([]bool, len(vs))
	good := make([][]archive.Witness, len(vs))
	rule := svc.Store.Rule(nil)
	now := svc.now()
	var ask []int // shown by no statement the member sent
	for i, v := range vs {
		if svc.Store.VerifySigned(v, ps[i].Sig) != nil {
			continue
		}
		d, ws := rule.Date(v, ps[i].Witnesses[:min(len(ps[i].Witnesses), maxProofWitnesses)], now)
		if d.Shown() {
			ok[i], good[i] = true, ws
			continue
		}
		ask = append(ask, i)
	}
	if len(ask) > 0 && svc.Dated != nil {
		q := make([]archive.Version, len(ask))
		for j, i := range ask {
			q[j] = vs[i]
		}
		for j, d := range svc.Dated(ctx, q) {
			ok[ask[j]] = d.Shown()
		}
	}
	dropped := len(vs) - countTrue(ok)
	if dropped > 0 {
		svc.unverified.Add(int64(dropped))
		svc.Log().Warn("query: rows failed verification", "rows", len(vs), "dropped", dropped)
	}
	return ok, good
}

// now is the Service's clock.
func (svc *Service) now() time.Time {
	if svc.Now != nil {
		return svc.Now()
	}
	return time.Now()
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
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
