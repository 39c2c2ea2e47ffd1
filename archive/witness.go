package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Witnesses. A fetcher's signature proves who produced a record and that
// no byte changed since, not when: a member can sign a capture dated
// twenty years back. A witness is a holder other than the fetcher that
// states, signed, when it first held a version: "I, W, held (url, capture
// time, payload digest) at Seen". A store with a Signer writes its own
// statement when it imports a record fetched by another peer, in the same
// index batch as the version (Import), with Seen its clock at that
// moment; it never changes it afterwards.
//
// The dating rule (Date): a version's capture time is believed when
//
//   - the store's own signer fetched it (a node believes its own clock), or
//   - a witness W other than the fetcher, not refused, states Seen with
//     Seen - capture time <= MaxWitnessDelay (and Seen not before the
//     capture time minus MaxClockSkew), or
//   - the capture is recent: now - capture time <= MaxWitnessDelay, so its
//     witnesses may still be on their way (push replication brings them
//     within seconds; the periodic sync within a round).
//
// Otherwise the version is Unwitnessed: kept, but not shown as of its date
// (the gateway, the CDX and exports leave it out). A back-dated capture is
// therefore believed only if it is back-dated by less than
// MaxWitnessDelay. Statements travel with the versions: a joiner that
// pulls an old version witnesses it too late to date it, and takes the
// statements of the holders it can ask (node/witness); a migrated archive
// keeps its statements in its index (Reindex copies them).
//
// What a witness proves: that an independent member held those exact
// bytes under that date no later than Seen. It does not prove that the
// site served them: a fetcher can still invent content dated now.

// MaxWitnessDelay bounds how long after its capture time a version must
// have been witnessed to be believed as of that time.
const MaxWitnessDelay = 48 * time.Hour

// Dating says how much a store believes a version's capture time.
type Dating int

// Datings, from most to least believed.
const (
	// Unwitnessed: no independent holder witnessed it in time; not shown
	// as of its date.
	Unwitnessed Dating = iota
	// Pending: too recent to judge; witnesses may be on their way.
	Pending
	// Witnessed: a holder other than the fetcher held it within
	// MaxWitnessDelay of its date.
	Witnessed
	// Fetched: this store's own signer fetched it.
	Fetched
	// Imported: read from another tool's file (Version.Imported), shown
	// as imported, never as a crawl: this store imported it, or a holder
	// other than the importer held it within MaxWitnessDelay of the
	// import, or the import is recent (imported.go).
	Imported
)

// String names d as status pages and the CDX print it.
func (d Dating) String() string {
	switch d {
	case Fetched:
		return "fetched"
	case Imported:
		return "imported"
	case Witnessed:
		return "witnessed"
	case Pending:
		return "pending"
	default:
		return "unwitnessed"
	}
}

// Shown reports whether a version so dated is shown as of its date.
func (d Dating) Shown() bool { return d != Unwitnessed }

// Witness is a holder's signed statement that it held a version at Seen.
type Witness struct {
	Peer string    `json:"peer"` // the witnessing peer
	Seen time.Time `json:"seen"` // when it first held the version
	Sig  []byte    `json:"sig"`  // Peer's signature of WitnessMessage
}

// maxWitnesses bounds the statements a store keeps per version: k - 1
// honest holders witness a version, a few more arrive through joiners.
const maxWitnesses = 8

// ErrWitness reports a witness statement that does not verify.
var ErrWitness = errors.New("archive: bad witness statement")

// WitnessMessage is what a witness signs: a domain tag, the URL, the
// capture time and payload digest (as in SignedMessage) and Seen.
func WitnessMessage(url string, t time.Time, digest id.ID, seen time.Time) []byte {
	return []byte("herod-witness-v1\n" + url + "\n" + formatWarcDate(t) + "\n" + digest.String() + "\n" + formatWarcDate(seen))
}

// WitnessRule is what judging a version's date needs besides its
// statements: who this store is and whom to believe.
type WitnessRule struct {
	Self     string   // this store's signing peer ("" if it signs nothing)
	Verifier Verifier // checks statements; nil believes none
	// Refused reports a peer whose word is not taken (purged); nil refuses
	// none.
	Refused func(peer string) bool
	// Member, if set, reports whether peer is a ring member: a statement
	// by a non-member (a key made up for the purpose) is ignored.
	Member func(peer string) bool
	Delay  time.Duration // MaxWitnessDelay if zero
}

// Check verifies one statement about v: signed by its peer, by a peer
// other than v's fetcher, not refused, a member, and seen no earlier than
// the capture time allows. It does not judge the delay.
func (r WitnessRule) Check(v Version, w Witness) error {
	switch {
	case w.Peer == "" || len(w.Peer) > 128 || len(w.Sig) == 0 || len(w.Sig) > 512:
		return fmt.Errorf("%w: malformed", ErrWitness)
	case w.Peer == v.Peer:
		return fmt.Errorf("%w: %s witnesses its own capture", ErrWitness, w.Peer)
	case w.Seen.Before(v.Time.Add(-MaxClockSkew)):
		return fmt.Errorf("%w: seen %s before its capture %s", ErrWitness, formatWarcDate(w.Seen), formatWarcDate(v.Time))
	case r.Refused != nil && r.Refused(w.Peer):
		return fmt.Errorf("%w: %s is refused", ErrWitness, w.Peer)
	case r.Member != nil && !r.Member(w.Peer):
		return fmt.Errorf("%w: %s is not a member", ErrWitness, w.Peer)
	case r.Verifier == nil:
		return fmt.Errorf("%w: no verifier", ErrWitness)
	}
	if err := r.Verifier.Verify(w.Peer, WitnessMessage(v.URL, v.Time, v.Digest, w.Seen), w.Sig); err != nil {
		return fmt.Errorf("%w: %w", ErrWitness, err)
	}
	return nil
}

// Date judges v's capture time at now from statements ws (see the rule
// above); it returns the dating and the statements that vouch for it,
// earliest first.
func (r WitnessRule) Date(v Version, ws []Witness, now time.Time) (Dating, []Witness) {
	delay := r.Delay
	if delay <= 0 {
		delay = MaxWitnessDelay
	}
	if v.Imported != nil {
		return r.dateImport(v, ws, now, delay)
	}
	var good []Witness
	for _, w := range ws {
		if w.Seen.Sub(v.Time) <= delay && r.Check(v, w) == nil {
			good = append(good, w)
		}
	}
	slices.SortFunc(good, func(a, b Witness) int { return a.Seen.Compare(b.Seen) })
	switch {
	case r.Self != "" && v.Peer == r.Self:
		return Fetched, good
	case len(good) > 0:
		return Witnessed, good
	case now.Sub(v.Time) <= delay:
		return Pending, nil
	}
	return Unwitnessed, nil
}

// witnessPrefix is the prefix of every statement about version (k, t, d):
// 'w' key(20) time(8) digest(20), then the witness's peer id. The peer id
// is written out, not interned: Reindex renumbers peers but copies
// statements as they are.
func witnessPrefix(k id.ID, t time.Time, d id.ID) []byte {
	b := versionKey(k, t, d)
	b[0] = pWitness
	return b
}

func encodeWitness(w Witness) []byte { return append(encTime(nil, w.Seen), w.Sig...) }

func decodeWitness(key, val []byte) (Witness, error) {
	if len(key) <= versionKeyLen || len(val) <= 8 {
		return Witness{}, fmt.Errorf("%w: %w: witness", ErrCorrupt, errBadValue)
	}
	return Witness{Peer: string(key[versionKeyLen:]), Seen: decTime(val[:8]), Sig: slices.Clone(val[8:])}, nil
}

// Witnesses returns the statements the store holds about v (its own
// included), verified when they were added; none for a version it does
// not hold.
func (s *Store) Witnesses(ctx context.Context, v Version) ([]Witness, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive witnesses: %w", err)
	}
	it := s.db.NewIterator(util.BytesPrefix(witnessPrefix(v.Key, v.Time, v.Digest)), nil)
	defer it.Release()
	var out []Witness
	for it.Next() {
		w, err := decodeWitness(it.Key(), it.Value())
		if err != nil {
			return nil, fmt.Errorf("archive witnesses: %w", err)
		}
		out = append(out, w)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("archive witnesses: %w", err)
	}
	return out, nil
}

// Rule returns the store's witness rule: its signer as Self, its verifier
// and its refused peers; member, if not nil, limits witnesses to ring
// members.
func (s *Store) Rule(member func(string) bool) WitnessRule {
	r := WitnessRule{Verifier: s.verifier, Refused: s.refused.has, Member: member}
	if s.signer != nil {
		r.Self = s.signer.Peer()
	}
	return r
}

// Date judges v's capture time by the statements the store holds (see
// WitnessRule.Date), with its own rule limited to member if not nil.
func (s *Store) Date(ctx context.Context, v Version, member func(string) bool) (Dating, []Witness, error) {
	ws, err := s.Witnesses(ctx, v)
	if err != nil {
		return Unwitnessed, nil, err
	}
	d, good := s.Rule(member).Date(v, ws, s.now())
	return d, good, nil
}

// Shown reports whether the store shows v as of its date (Date's verdict,
// without reading statements where the answer does not need them: a
// version this store fetched, or one too recent to judge). Listings and
// exports leave out the versions it is false for. A store without a
// Verifier checks no provenance, so it dates nothing and shows all.
func (s *Store) Shown(ctx context.Context, v Version) bool {
	if s.verifier == nil || (s.signer != nil && v.Peer == s.signer.Peer()) || s.now().Sub(v.Time) <= MaxWitnessDelay {
		return true
	}
	d, _, err := s.Date(ctx, v, nil)
	return err == nil && d.Shown()
}

// AddWitnesses stores the statements of ws about v that verify (Check)
// and that the store does not hold yet, up to maxWitnesses a version, in
// one synced index write; v must be a version the store holds. It
// returns how many it added; statements that do not verify are counted
// in bad and left out.
func (s *Store) AddWitnesses(ctx context.Context, v Version, ws []Witness) (added, bad int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("archive add witnesses: %w", err)
	}
	have, err := s.versionAt(v.Key, v.Time, v.Digest)
	if err != nil {
		return 0, 0, fmt.Errorf("archive add witnesses: %w", err)
	}
	held, err := s.Witnesses(ctx, have)
	if err != nil {
		return 0, 0, err
	}
	rule := s.Rule(nil)
	var keep []Witness
	for _, w := range ws {
		if len(held)+len(keep) >= maxWitnesses {
			break
		}
		if slices.ContainsFunc(held, func(h Witness) bool { return h.Peer == w.Peer }) ||
			slices.ContainsFunc(keep, func(h Witness) bool { return h.Peer == w.Peer }) {
			continue
		}
		if rule.Check(have, w) != nil {
			bad++
			continue
		}
		keep = append(keep, w)
	}
	if len(keep) == 0 {
		return 0, bad, nil
	}
	s.mu.Lock()
	if s.gc.closing || s.gc.stopped == nil {
		s.mu.Unlock()
		return 0, bad, fmt.Errorf("archive add witnesses: %w", errStoreClosed)
	}
	if err := s.failure(); err != nil {
		s.mu.Unlock()
		return 0, bad, fmt.Errorf("archive add witnesses: %w", err)
	}
	g := s.formingLocked()
	for _, w := range keep {
		putWitness(&g.b, have, w)
	}
	if d, _ := rule.Date(have, append(held, keep...), s.now()); d == Witnessed {
		g.b.Delete(undatedKey(have))
	}
	s.mu.Unlock()
	<-g.done
	if g.err != nil {
		return 0, bad, fmt.Errorf("archive add witnesses: %w", g.err)
	}
	return len(keep), bad, nil
}

// batchPutter is the part of a goleveldb batch that putWitness writes to.
type batchPutter interface{ Put(key, value []byte) }

// putWitness puts w's statement about v in b.
func putWitness(b batchPutter, v Version, w Witness) {
	k := append(witnessPrefix(v.Key, v.Time, v.Digest), w.Peer...)
	b.Put(k, encodeWitness(w))
}

// ownWitness returns the store's statement that it holds v now, nil when
// the store has no signer or fetched v itself.
func (s *Store) ownWitness(v Version) (*Witness, error) {
	if s.signer == nil || v.Peer == "" || v.Peer == s.signer.Peer() {
		return nil, nil
	}
	w := Witness{Peer: s.signer.Peer(), Seen: s.now().UTC()}
	sig, err := s.signer.Sign(WitnessMessage(v.URL, v.Time, v.Digest, w.Seen))
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	w.Sig = sig
	return &w, nil
}

// witnessKeys lists the keys of every statement about v, for purges.
func (s *Store) witnessKeys(v Version) ([][]byte, error) {
	it := s.db.NewIterator(util.BytesPrefix(witnessPrefix(v.Key, v.Time, v.Digest)), nil)
	defer it.Release()
	var out [][]byte
	for it.Next() {
		out = append(out, bytes.Clone(it.Key()))
	}
	return out, it.Error()
}

// undatedKey is v's key in the undated space: versions the store imported
// too late to date by its own statement, awaiting other holders'.
func undatedKey(v Version) []byte {
	b := versionKey(v.Key, v.Time, v.Digest)
	b[0] = pUndated
	return b
}

// Undated returns up to limit versions, after the one named by cursor
// (nil: from the start), that the store imported too late to witness them
// in time itself and that no statement it holds dates yet; and the cursor
// of the last one (nil when the listing is done). A node asks the other
// holders of each for their statements (AddWitnesses).
func (s *Store) Undated(ctx context.Context, cursor []byte, limit int) ([]Version, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("archive undated: %w", err)
	}
	rng := util.BytesPrefix([]byte{pUndated})
	if cursor != nil {
		rng.Start = append(slices.Clone(cursor), 0)
	}
	it := s.db.NewIterator(rng, nil)
	defer it.Release()
	var out []Version
	var last []byte
	for it.Next() && len(out) < limit {
		k := it.Key()
		if len(k) != versionKeyLen {
			return nil, nil, fmt.Errorf("archive undated: %w: %w: key", ErrCorrupt, errBadValue)
		}
		last = slices.Clone(k)
		vk := slices.Clone(k)
		vk[0] = pVersion
		val, err := s.db.Get(vk, nil)
		if err != nil {
			continue // purged meanwhile
		}
		v, err := s.decodeVersion(vk, val)
		if err != nil {
			return nil, nil, fmt.Errorf("archive undated: %w", err)
		}
		out = append(out, v)
	}
	if err := it.Error(); err != nil {
		return nil, nil, fmt.Errorf("archive undated: %w", err)
	}
	if len(out) < limit {
		last = nil
	}
	return out, last, nil
}
