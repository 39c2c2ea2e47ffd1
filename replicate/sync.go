package replicate

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Defaults for the zero values of Options.
const (
	DefaultFanout      = 16
	DefaultListMax     = 8
	DefaultMaxRequests = 20000
)

// ErrBudget reports that a sync stopped after Options.MaxRequests round
// trips (a peer whose sums never agree, or a very large difference that
// the next round continues).
var ErrBudget = errors.New("replicate: request budget exhausted")

// Options tunes Sync. Zero values mean the defaults.
type Options struct {
	// Fanout is how many sub-ranges a differing range is split into (2 to
	// MaxFanout; default DefaultFanout). The peer answers all their sums
	// in one round trip.
	Fanout int
	// ListMax: a differing range whose peer count is at most ListMax is
	// listed instead of split (default DefaultListMax).
	ListMax int
	// MaxRequests bounds the round trips of one Sync (default
	// DefaultMaxRequests).
	MaxRequests int
	// Skip, if set, names records not to read: those Local refused before
	// for their signer's share of its quota (Refused), which it would
	// refuse again. They are counted in Stats.Skipped.
	Skip func(e archive.Entry) bool
	// Refused, if set, is told of each record Local refused because its
	// signer's versions, or its range's, took their share of the quota
	// (archive.ErrSignerShare, archive.ErrRangeShare); the sync goes on
	// with the others.
	Refused func(e archive.Entry)
}

func (o Options) withDefaults() Options {
	if o.Fanout < 2 || o.Fanout > MaxFanout {
		o.Fanout = DefaultFanout
	}
	if o.ListMax <= 0 {
		o.ListMax = DefaultListMax
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	return o
}

// Stats describes what one or more Syncs did. Traffic is filled in when
// the peer is a *Client (or anything with a Traffic() Traffic method).
type Stats struct {
	Syncs    int64 `json:"syncs"`
	InSync   int64 `json:"in_sync"`  // syncs whose whole range compared equal at once
	Compared int64 `json:"compared"` // ranges whose sums were compared
	Listed   int64 `json:"listed"`   // peer entries listed
	// Skipped counts records not read because Options.Skip named them;
	// Shared those Local refused for their signer's or range's share of its
	// quota.
	Skipped int64 `json:"skipped,omitempty"`
	Shared  int64 `json:"shared,omitempty"`
	Pulled  int64 `json:"pulled"` // files imported
	// PulledBytes is the size of the imported files.
	PulledBytes int64 `json:"pulled_bytes"`
	// Present counts files listed as missing that Import found already
	// stored (a concurrent Put or sync).
	Present int64 `json:"present"`
	// Rejected counts files refused: bytes that fail verification, names
	// outside the range asked for.
	Rejected int64 `json:"rejected"`
	// Failed counts files the peer could not send.
	Failed  int64   `json:"failed"`
	Traffic Traffic `json:"traffic"`
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Syncs += o.Syncs
	s.InSync += o.InSync
	s.Compared += o.Compared
	s.Listed += o.Listed
	s.Pulled += o.Pulled
	s.PulledBytes += o.PulledBytes
	s.Present += o.Present
	s.Rejected += o.Rejected
	s.Skipped += o.Skipped
	s.Shared += o.Shared
	s.Failed += o.Failed
	s.Traffic.Requests += o.Traffic.Requests
	s.Traffic.Sent += o.Traffic.Sent
	s.Traffic.Received += o.Traffic.Received
}

// batchPeer is a Peer that answers several sums in one round trip.
type batchPeer interface {
	RangeSums(ctx context.Context, a, b id.ID, n int) ([]archive.DirSum, error)
}

type metered interface{ Traffic() Traffic }

// Sync makes local hold every file peer holds in the ring range (a, b]
// (a == b: the whole ring). It compares the two sums of the range; if
// they differ it splits the range into Fanout equal sub-ranges and
// recurses into those whose sums differ, down to ranges of at most ListMax
// peer files, whose entries it lists on both sides. It pulls the files the
// peer has and local lacks and stores them with Import, which verifies
// them. It never deletes anything, and files only local holds stay where
// they are (the peer pulls them in its own Sync).
//
// A file that fails verification or lies outside the range is refused and
// counted; Sync goes on with the rest. Sync returns the first error that
// stops it: the peer unreachable, a local store error, ErrBudget.
func Sync(ctx context.Context, local Local, peer Peer, a, b id.ID, opt Options) (Stats, error) {
	s := &syncer{local: local, peer: peer, opt: opt.withDefaults()}
	s.st.Syncs = 1
	done := s.meter()
	err := s.run(ctx, a, b)
	done()
	if err != nil {
		return s.st, fmt.Errorf("replicate sync: %w", err)
	}
	return s.st, nil
}

// Copy makes local hold the records es that peer offered from the range
// (a, b] (a == b: the whole ring): it reads them from peer, MaxBatch a
// round trip when peer is a BatchReader, and stores them with Import,
// which verifies each — the path Sync takes for the records it lists.
// Names outside (a, b] are refused and counted in Stats.Rejected, as are
// records that fail verification; records already held count as Present
// (a Holder's are not read from peer at all).
// It returns the first error that stops it: the peer unreachable, a local
// store error, ErrBudget.
func Copy(ctx context.Context, local Local, peer Peer, a, b id.ID, es []archive.Entry, opt Options) (Stats, error) {
	s := &syncer{local: local, peer: peer, opt: opt.withDefaults()}
	done := s.meter()
	want := make([]archive.Entry, 0, len(es))
	seen := make(map[archive.Entry]bool, len(es))
	h, _ := local.(Holder)
	for _, e := range es {
		switch {
		case seen[e]:
		case a != b && !id.InHalfOpen(e.Key, a, b):
			s.st.Rejected++
		case s.opt.Skip != nil && s.opt.Skip(e):
			s.st.Skipped++
		case h != nil && holds(ctx, h, e):
			s.st.Present++ // not read again: a round copied it first
		default:
			want = append(want, e)
		}
		seen[e] = true
	}
	var err error
	if br, ok := peer.(BatchReader); ok {
		err = s.pullBatches(ctx, br, want)
	} else {
		for _, e := range want {
			if err = s.pull(ctx, e); err != nil {
				break
			}
		}
	}
	done()
	if err != nil {
		return s.st, fmt.Errorf("replicate copy: %w", err)
	}
	return s.st, nil
}

// Holder is a Local that tells whether it holds a version, so that Copy
// reads from the peer only what it lacks. *archive.Store implements it.
type Holder interface {
	Holds(ctx context.Context, e archive.Entry) (bool, error)
}

var _ Holder = (*archive.Store)(nil)

// holds reports whether h holds e; an error counts as not held (the
// record is read and Import decides).
func holds(ctx context.Context, h Holder, e archive.Entry) bool {
	ok, err := h.Holds(ctx, e)
	return err == nil && ok
}

// meter starts counting the peer's traffic, when it is metered; the
// function it returns sets Stats.Traffic to what passed since.
func (s *syncer) meter() func() {
	m, ok := s.peer.(metered)
	if !ok {
		return func() {}
	}
	before := m.Traffic()
	return func() {
		after := m.Traffic()
		s.st.Traffic = Traffic{
			Requests: after.Requests - before.Requests,
			Sent:     after.Sent - before.Sent, Received: after.Received - before.Received,
		}
	}
}

type syncer struct {
	local    Local
	peer     Peer
	opt      Options
	dictMu   sync.Mutex                // one dictionary request at a time
	dicts    map[archive.DictRef]error // what asking for each dictionary gave; guarded by dictMu
	requests int

	mu sync.Mutex // guards st's import counts while storeAll runs
	st Stats
}

func (s *syncer) spend() error {
	s.requests++
	if s.requests > s.opt.MaxRequests {
		return ErrBudget
	}
	return nil
}

func (s *syncer) run(ctx context.Context, a, b id.ID) error {
	if err := s.spend(); err != nil {
		return err
	}
	rs, err := s.peer.RangeSum(ctx, a, b)
	if err != nil {
		return err
	}
	ls, err := s.local.RangeSum(ctx, a, b)
	if err != nil {
		return err
	}
	s.st.Compared++
	if ls == rs {
		s.st.InSync = 1
		return nil
	}
	return s.descend(ctx, a, b, ls, rs, 0)
}

// maxDepth bounds recursion: 160 bits split at least in halves.
const maxDepth = id.Bits

// descend reconciles (a, b] whose sums ls (local) and rs (peer) differ.
func (s *syncer) descend(ctx context.Context, a, b id.ID, ls, rs archive.DirSum, depth int) error {
	if rs.Count == 0 || ls == rs {
		return nil // nothing to pull
	}
	bounds := Split(a, b, s.opt.Fanout)
	if rs.Count <= int64(s.opt.ListMax) || ls.Count == 0 && rs.Count <= MaxEntries ||
		bounds == nil || depth >= maxDepth {
		return s.list(ctx, a, b)
	}
	if err := s.spend(); err != nil {
		return err
	}
	remote, err := s.sums(ctx, a, b, bounds)
	if err != nil {
		return err
	}
	for i := range remote {
		l, err := s.local.RangeSum(ctx, bounds[i], bounds[i+1])
		if err != nil {
			return err
		}
		s.st.Compared++
		if err := s.descend(ctx, bounds[i], bounds[i+1], l, remote[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}

// sums asks the peer for the sums of consecutive ranges, in one round
// trip when it can.
func (s *syncer) sums(ctx context.Context, a, b id.ID, bounds []id.ID) ([]archive.DirSum, error) {
	if bp, ok := s.peer.(batchPeer); ok {
		out, err := bp.RangeSums(ctx, a, b, len(bounds)-1)
		if err == nil && len(out) != len(bounds)-1 {
			err = fmt.Errorf("%w: %d sums for %d ranges", ErrProtocol, len(out), len(bounds)-1)
		}
		return out, err
	}
	out := make([]archive.DirSum, len(bounds)-1)
	for i := range out {
		d, err := s.peer.RangeSum(ctx, bounds[i], bounds[i+1])
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// list lists (a, b] on both sides and pulls what only the peer holds.
func (s *syncer) list(ctx context.Context, a, b id.ID) error {
	if err := s.spend(); err != nil {
		return err
	}
	remote, err := s.peer.Entries(ctx, a, b)
	if err != nil {
		return err
	}
	s.st.Listed += int64(len(remote))
	mine, err := s.local.Entries(ctx, a, b)
	if err != nil {
		return err
	}
	have := make(map[archive.Entry]bool, len(mine))
	for _, e := range mine {
		have[e] = true
	}
	var want []archive.Entry
	for _, e := range remote {
		if have[e] {
			continue
		}
		have[e] = true // a peer listing a name twice gets one pull
		if a != b && !id.InHalfOpen(e.Key, a, b) {
			s.st.Rejected++
			continue
		}
		if s.opt.Skip != nil && s.opt.Skip(e) {
			s.st.Skipped++
			continue
		}
		want = append(want, e)
	}
	if br, ok := s.peer.(BatchReader); ok {
		return s.pullBatches(ctx, br, want)
	}
	for _, e := range want {
		if err := s.pull(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// pullBatches copies the records es from the peer, MaxBatch a round
// trip; those a full reply left out are asked for again.
func (s *syncer) pullBatches(ctx context.Context, br BatchReader, es []archive.Entry) error {
	for len(es) > 0 {
		if err := s.spend(); err != nil {
			return err
		}
		n := min(len(es), MaxBatch)
		got, err := br.ReadFiles(ctx, es[:n])
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.st.Failed += int64(n)
			es = es[n:]
			continue
		}
		var again, ok []archive.Entry
		var data [][]byte
		for i, f := range got {
			switch {
			case errors.Is(f.Err, ErrOmitted):
				again = append(again, es[i])
			case f.Err != nil:
				s.st.Failed++
			default:
				ok, data = append(ok, es[i]), append(data, f.Data)
			}
		}
		if err := s.storeAll(ctx, ok, data); err != nil {
			return err
		}
		if len(again) == n {
			return fmt.Errorf("%w: a batch reply held no record", ErrProtocol)
		}
		es = append(again, es[n:]...)
	}
	return nil
}

// pull copies one file from the peer. Only errors that should stop the
// whole sync are returned.
func (s *syncer) pull(ctx context.Context, e archive.Entry) error {
	if err := s.spend(); err != nil {
		return err
	}
	data, err := s.peer.ReadFile(ctx, e)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.st.Failed++
		return nil
	}
	return s.store(ctx, e, data)
}

// errNoDict marks a record whose dictionary Local lacks and could not get.
var errNoDict = errors.New("replicate: dictionary not held")

// getDict makes Local hold the dictionary ref names, asking the peer for
// it (a DictPeer) once in the sync: the imports of a batch that lack it
// wait for the first one's answer. The error wraps errNoDict, and
// archive.ErrCorrupt too for a forged dictionary.
func (s *syncer) getDict(ctx context.Context, ref archive.DictRef) error {
	s.dictMu.Lock()
	defer s.dictMu.Unlock()
	if err, done := s.dicts[ref]; done {
		return err
	}
	var err error
	dp, ok := s.peer.(DictPeer)
	if !ok {
		err = fmt.Errorf("%w: %s: the peer sends no dictionaries", errNoDict, ref)
	} else if raw, derr := dp.Dictionary(ctx, ref); derr != nil {
		err = fmt.Errorf("%w: %w", errNoDict, derr)
	} else if derr := s.local.AddDictionary(ref, raw); derr != nil {
		err = fmt.Errorf("%w: %w", errNoDict, derr)
	}
	if ctx.Err() == nil {
		if s.dicts == nil {
			s.dicts = map[archive.DictRef]error{}
		}
		s.dicts[ref] = err
	}
	return err
}

// importers bounds the records of one batch imported at once.
const importers = 8

// storeAll imports a batch's records, importers at a time: a store syncs
// what its writers have under way together, so concurrent imports share
// syncs where one at a time would wait for a sync each. The importers
// are goroutines that take the records in turn, not one goroutine a
// record: an import's stack grows to what decompression and signature
// checks need once per importer. It returns the first error that stops
// the sync.
func (s *syncer) storeAll(ctx context.Context, es []archive.Entry, data [][]byte) error {
	if len(es) == 1 {
		return s.store(ctx, es[0], data[0])
	}
	errs := make([]error, len(es))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(importers, len(es)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(es); i = int(next.Add(1) - 1) {
				errs[i] = s.store(ctx, es[i], data[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// store imports a record read from the peer, which Import verifies. It
// may run on several goroutines at once (storeAll).
func (s *syncer) store(ctx context.Context, e archive.Entry, data []byte) error {
	_, added, err := s.local.Import(ctx, e.Name(), data)
	var missing *archive.MissingDictError
	if errors.As(err, &missing) {
		if err = s.getDict(ctx, missing.Ref); err == nil {
			_, added, err = s.local.Import(ctx, e.Name(), data)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case errors.Is(err, errNoDict) && !errors.Is(err, archive.ErrCorrupt):
		s.st.Failed++
	case errors.Is(err, archive.ErrCorrupt):
		s.st.Rejected++
	case errors.Is(err, archive.ErrSignerShare) || errors.Is(err, archive.ErrRangeShare):
		s.st.Shared++
		if s.opt.Refused != nil {
			s.opt.Refused(e)
		}
	case err != nil:
		return err
	case added:
		s.st.Pulled++
		s.st.PulledBytes += int64(len(data))
	default:
		s.st.Present++
	}
	return nil
}

// ring is 2^160, the size of the identifier circle.
var ring = new(big.Int).Lsh(big.NewInt(1), id.Bits)

// Split returns the n+1 boundaries of n equal consecutive sub-ranges of
// (a, b] (a == b: the whole ring), or nil if the range is too narrow to
// split into n non-empty parts.
func Split(a, b id.ID, n int) []id.ID {
	lo := new(big.Int).SetBytes(a[:])
	w := new(big.Int).Sub(new(big.Int).SetBytes(b[:]), lo)
	w.Mod(w, ring)
	if a == b {
		w.Set(ring)
	}
	if w.Cmp(big.NewInt(int64(n))) < 0 {
		return nil
	}
	out := make([]id.ID, n+1)
	out[0], out[n] = a, b
	step := new(big.Int)
	for i := 1; i < n; i++ {
		step.Mul(w, big.NewInt(int64(i)))
		step.Quo(step, big.NewInt(int64(n)))
		step.Add(step, lo)
		step.Mod(step, ring)
		out[i] = id.FromBig(step)
	}
	return out
}
