package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// Ring is what a Service needs of the ring; *ring.Ring implements it.
type Ring interface {
	OwnerVnode(key id.ID) (ring.Node, bool)
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
	Vnodes() []ring.Node
	Predecessor(v id.ID) (ring.Node, bool)
	// SuccessorsFrom returns owner and the virtual servers after it on
	// up to k distinct real nodes (see ring.Ring.SuccessorsFrom).
	SuccessorsFrom(ctx context.Context, owner ring.Node, k int) ([]ring.Node, error)
}

var _ Ring = (*ring.Ring)(nil)

// Service is a node's search service (see the package comment). Every
// field but Logger must be set before use.
type Service struct {
	Store *fts.Store
	Self  ring.Contact
	Ring  Ring
	K     int // holders of a term: its owner and successors on K real nodes in all
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open   func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	Logger *slog.Logger
	// MaxPostings bounds the store against members: past it, their adds
	// are refused (ErrIndexFull) and counted; this node's own postings
	// are still stored. 0: DefaultMaxPostings.
	MaxPostings int64
	// QueueCap bounds the URLs waiting to be indexed (0: 8,192); past
	// it Notify drops them and Run catches up later.
	QueueCap int
	// SyncInterval is the period of posting sync rounds (syncround.go);
	// 0: DefaultSyncInterval.
	SyncInterval time.Duration
	// PurgeFilter, if set, returns the test of the captures purged now
	// (nil if none): sync stores no posting of one.
	PurgeFilter func() func(url string, from int64) bool
	// Resume, if set, limits Run's backfill to the keys it returns true
	// for: those a clean stop's Mark cannot vouch for (Mark.Changed).
	Resume func(key id.ID) bool
	// Owned, if set, returns the key ranges the node owns now: Run
	// records them when its backfill starts and ends, for the Mark.
	Owned func() []archive.KeyRange

	syncState          // sync.go
	markState          // mark.go
	sums      sumCache // digests of ranges (sync.go)

	sent             atomic.Int64 // postings delivered to holders (remote and local)
	sentBytes        atomic.Int64 // encoded posting bytes sent to other nodes
	received         atomic.Int64 // postings received from other nodes
	refused          atomic.Int64 // postings of other nodes refused at MaxPostings
	served           atomic.Int64 // posting queries answered
	failed           atomic.Int64 // deliveries to a holder that failed
	queued           atomic.Int64 // URLs waiting to be indexed
	dropped          atomic.Int64 // URLs the full queue refused (left to a catch-up)
	lostSince        atomic.Int64 // Unix ms: versions since then may lack postings (0: none)
	catchUps         atomic.Int64 // catch-up passes run
	indexed          atomic.Int64 // versions indexed
	errs             atomic.Int64 // indexing errors
	unreadable       atomic.Int64 // versions skipped: text unreadable
	backfill         atomic.Int32 // 1 while the backfill runs
	backfilled       atomic.Bool  // the start's backfill finished without an error
	backfillVersions atomic.Int64 // versions the start's backfill indexed
	skipped          atomic.Bool  // a backfill or catch-up could not read some URL's versions
	catching         atomic.Int32 // 1 while a catch-up runs

	// Behind's state: since when the crawl is paused (zero: it is not),
	// and whether it gave up pausing until the queue is down to a quarter.
	behindMu     sync.Mutex
	behindSince  time.Time
	behindGaveUp bool

	queueOnce sync.Once
	queue     chan fts.Added
}

var (
	_ fts.Sink   = (*Service)(nil)
	_ fts.Source = (*Service)(nil)
	_ fts.Stats  = (*Service)(nil)
)

func (sv *Service) log() *slog.Logger {
	if sv.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return sv.Logger
}

// holders returns the holders of the term keys owned by owner: owner's
// real node and the real nodes of its successors, K in all, in ring
// order.
//
// The successors come from owner's successor list (one call); only when
// that list cannot be read (owner gone) are they found by a lookup a step,
// which routes around the failure.
func (sv *Service) holders(ctx context.Context, owner ring.Node) []ring.Contact {
	k := max(sv.K, 1)
	if ns, err := sv.Ring.SuccessorsFrom(ctx, owner, k); err == nil || len(ns) >= k {
		hs := make([]ring.Contact, len(ns))
		for i, n := range ns {
			hs[i] = n.Contact
		}
		return hs
	}
	hs := []ring.Contact{owner.Contact}
	seen := map[string]bool{owner.Peer: true}
	cur := owner
	for step := 0; step < 32 && len(hs) < max(sv.K, 1); step++ {
		next, err := sv.Ring.Lookup(ctx, cur.ID.AddPow2(0))
		if err != nil || next.ID == owner.ID {
			break
		}
		cur = next
		if !seen[next.Peer] {
			seen[next.Peer] = true
			hs = append(hs, next.Contact)
		}
	}
	return hs
}

// owner returns the virtual server that owns key.
func (sv *Service) owner(ctx context.Context, key id.ID) (ring.Node, error) {
	if v, ok := sv.Ring.OwnerVnode(key); ok {
		return v, nil
	}
	v, err := sv.Ring.Lookup(ctx, key)
	if err != nil {
		return ring.Node{}, fmt.Errorf("search: lookup %s: %w", key.Short(), err)
	}
	return v, nil
}

// Add delivers postings to their terms' holders: sorted by term key, one
// lookup for each run of keys one virtual server owns, one message for
// each real node. It fails when a posting reached none of its holders.
func (sv *Service) Add(ctx context.Context, ps []fts.Posting) error {
	// Sorted by key through an order of indices: the postings are
	// copied once, into sorted.
	keys := make([]id.ID, len(ps))
	order := make([]int32, len(ps))
	for i, p := range ps {
		keys[i], order[i] = fts.TermKey(p.Term), int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return keys[a].Cmp(keys[b]) })
	sorted := make([]fts.Posting, len(ps))
	for i, j := range order {
		sorted[i] = ps[j]
	}
	key := func(i int) id.ID { return keys[order[i]] } // of sorted[i]
	// Each run of keys with its holders.
	var runs []postingRun
	for i := 0; i < len(sorted); {
		o, err := sv.owner(ctx, key(i))
		if err != nil {
			return err
		}
		r := postingRun{hs: sv.holders(ctx, o), lo: i}
		first := key(i)
		for i < len(sorted) && (key(i) == first || id.InHalfOpen(key(i), first, o.ID)) {
			i++
		}
		r.hi = i
		runs = append(runs, r)
	}
	byPeer, contacts := postingsByPeer(sorted, runs)
	ok := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for peer, pps := range byPeer {
		wg.Go(func() {
			err := sv.deliver(ctx, contacts[peer], pps)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				sv.failed.Add(1)
				sv.log().Debug("postings not delivered", "to", contacts[peer].Addr, "postings", len(pps), "err", err)
				return
			}
			ok[peer] = true
		})
	}
	wg.Wait()
	for _, r := range runs {
		if !slices.ContainsFunc(r.hs, func(h ring.Contact) bool { return ok[h.Peer] }) {
			return fmt.Errorf("search: %d postings reached none of their %d holders", r.hi-r.lo, len(r.hs))
		}
	}
	return nil
}

// postingRun is a run of an Add's postings, sorted[lo:hi], whose keys
// one virtual server owns, with that server's holders.
type postingRun struct {
	hs     []ring.Contact
	lo, hi int
}

// postingsByPeer returns the postings of sorted each real node holds
// (one message a node) and the nodes' contacts: a node's runs in key
// order, merged where they are adjacent. A node whose runs make one span
// of sorted (one that holds every run, as a node alone does) gets that
// part of sorted itself, its capacity cut at its end; others a copy of
// their runs. The slices are for reading only.
func postingsByPeer(sorted []fts.Posting, runs []postingRun) (map[string][]fts.Posting, map[string]ring.Contact) {
	type span struct{ lo, hi int }
	spans := map[string][]span{}
	contacts := map[string]ring.Contact{}
	for _, r := range runs {
		for _, h := range r.hs {
			contacts[h.Peer] = h
			ss := spans[h.Peer]
			if n := len(ss); n > 0 && ss[n-1].hi == r.lo {
				ss[n-1].hi = r.hi
				continue
			}
			spans[h.Peer] = append(ss, span{r.lo, r.hi})
		}
	}
	byPeer := make(map[string][]fts.Posting, len(spans))
	for peer, ss := range spans {
		if len(ss) == 1 {
			byPeer[peer] = sorted[ss[0].lo:ss[0].hi:ss[0].hi]
			continue
		}
		n := 0
		for _, sp := range ss {
			n += sp.hi - sp.lo
		}
		pps := make([]fts.Posting, 0, n)
		for _, sp := range ss {
			pps = append(pps, sorted[sp.lo:sp.hi]...)
		}
		byPeer[peer] = pps
	}
	return byPeer, contacts
}

// deliver hands postings to one real node, in messages of at most
// maxAddPostings and about addChunk bytes before compression.
func (sv *Service) deliver(ctx context.Context, c ring.Contact, ps []fts.Posting) error {
	if c.Peer == sv.Self.Peer {
		if err := sv.Store.Put(ctx, ps); err != nil {
			return err
		}
		sv.notePut()
		sv.sent.Add(int64(len(ps)))
		return nil
	}
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b fts.Posting) int { return a.Key.Cmp(b.Key) })
	for len(ps) > 0 {
		n, size := 0, 0
		for n < len(ps) && n < maxAddPostings && size < addChunk {
			size += len(ps[n].URL) + len(ps[n].Term) + 48
			n++
		}
		b := encodeAdd(ps[:n])
		if _, err := sv.call(ctx, c, Request{Op: OpAdd, Postings: n}, b); err != nil {
			return err
		}
		sv.sent.Add(int64(n))
		sv.sentBytes.Add(int64(len(b)))
		ps = ps[n:]
	}
	return nil
}

// askers is how many holders of a term a query asks at once.
const askers = 2

// Postings asks two holders of the term at once (this node's store if it
// is one) and merges their answers: every posting either sent, checked,
// and the larger document frequency. It fails only when no holder
// answers.
func (sv *Service) Postings(ctx context.Context, q fts.PostingQuery) (fts.PostingList, error) {
	o, err := sv.owner(ctx, fts.TermKey(q.Term))
	if err != nil {
		return fts.PostingList{}, err
	}
	hs := sv.holders(ctx, o)
	lists := make([]*fts.PostingList, len(hs))
	errs := make([]error, len(hs))
	ask := func(i int) {
		if hs[i].Peer == sv.Self.Peer {
			l, err := sv.Store.Postings(ctx, q)
			lists[i], errs[i] = &l, err
			return
		}
		rep, err := sv.call(ctx, hs[i], Request{Op: OpQuery, Query: &q}, nil)
		if err == nil && rep.List == nil {
			err = fmt.Errorf("%w: %s sent no list", errRemote, hs[i].Addr)
		}
		lists[i], errs[i] = rep.List, err
	}
	// The first two holders at once; the others only for one that failed.
	var wg sync.WaitGroup
	for i := range min(askers, len(hs)) {
		wg.Go(func() { ask(i) })
	}
	wg.Wait()
	answered := 0
	for i := range min(askers, len(hs)) {
		if errs[i] == nil {
			answered++
		}
	}
	for i := askers; i < len(hs) && answered < askers; i++ {
		if ask(i); errs[i] == nil {
			answered++
		}
	}
	if answered == 0 {
		return fts.PostingList{}, fmt.Errorf("search: no holder of %q answered: %w", q.Term, errors.Join(errs...))
	}
	return merge(q, lists, errs), nil
}

// merge unites the holders' answers to q: each posting (by identity)
// once, those that fail Check or do not answer q left out.
func merge(q fts.PostingQuery, lists []*fts.PostingList, errs []error) fts.PostingList {
	var out fts.PostingList
	out.Complete = true
	type ident struct {
		key  id.ID
		from int64
	}
	seen := map[ident]bool{}
	for i, l := range lists {
		if errs[i] != nil || l == nil {
			continue
		}
		out.DF = max(out.DF, l.DF)
		out.Complete = out.Complete && l.Complete
		for _, p := range l.Postings {
			k := ident{p.Key, p.From}
			if seen[k] || p.Check() != nil || p.Term != q.Term || !p.Live(q.At) || p.Key != id.OfString(p.URL) {
				continue
			}
			seen[k] = true
			out.Postings = append(out.Postings, p)
		}
	}
	return out
}

// DocStats estimates the ring's collection statistics as of at: this
// node's document table (the versions it indexed, of the URLs it owns)
// scaled by the share of the key space its virtual servers own.
func (sv *Service) DocStats(ctx context.Context, at int64) (fts.DocStats, error) {
	st, err := sv.Store.DocStats(ctx, at)
	if err != nil {
		return st, err
	}
	if share := sv.share(); share > 0 && share < 1 {
		st.N = int64(float64(st.N) / share)
		st.SumLen = int64(float64(st.SumLen) / share)
	}
	return st, nil
}

// share returns the fraction of the key space this node's virtual
// servers own (0 while no predecessor is known).
func (sv *Service) share() float64 {
	total := new(big.Int)
	circle := new(big.Int).Lsh(big.NewInt(1), id.Bits)
	for _, v := range sv.Ring.Vnodes() {
		p, ok := sv.Ring.Predecessor(v.ID)
		if !ok {
			continue
		}
		if p.ID == v.ID {
			return 1
		}
		total.Add(total, id.Distance(p.ID, v.ID))
	}
	f, _ := new(big.Rat).SetFrac(total, circle).Float64()
	return f
}
