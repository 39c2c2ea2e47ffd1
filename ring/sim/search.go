package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// SearchWire sizes the search messages a query sends, with the real
// encoders of the protocols that carry them (the test wires node/search
// and node/resolve): bytes on the wire of one request and its reply.
type SearchWire interface {
	// PostingQuery sizes q to one holder of its term and l, the reply.
	PostingQuery(q fts.PostingQuery, l fts.PostingList) (req, rep int)
	// Capture sizes the verifying resolver's request to a holder for the
	// capture of url live at t and its reply: the version and its
	// signed record of the page's title and text.
	Capture(url string, t time.Time, title, text string) (req, rep int)
}

// SearchConfig describes the search model run on a simulated ring: a
// query's terms drawn by frequency from Corpus, each term's postings
// at the owner of SHA-1(term) and its successors on K real nodes.
// Zero values mean the defaults.
type SearchConfig struct {
	Corpus CorpusModel
	// PagesPerNode is the archive's size over its real nodes (default
	// 10,000).
	PagesPerNode int
	// K is the holders of a term (default 3, --replicas).
	K int
	// Limit is the postings a term's first request asks for (default
	// search.DefaultLimit).
	Limit int
	// Results is the results verified (default 10, a result page).
	Results int
	// Queries of each number of terms, 1, 2 and 3 (default 1,000).
	Queries int
	Seed    uint64
	// Wire sizes the messages; required.
	Wire SearchWire
}

// askers is how many holders of a term a query asks, as node/search does.
const askers = 2

// QueryCost is what one query cost.
type QueryCost struct {
	Terms        int
	Lookups      int // ring lookups (each term's owner and the walk to its holders; each result's owner)
	Hops         int // remote lookup steps that answered, summed over the lookups
	MaxHops      int // most hops of one of its lookups
	Requests     int // posting queries and capture requests to other nodes
	Second       int // terms asked again for the candidates' keys
	Matches      int // pages holding every term
	Verified     int // captures fetched to verify results
	LookupBytes  int // ring messages of the lookups
	PostingBytes int // posting queries and replies
	VerifyBytes  int // capture requests and replies
	MaxRequest   int // largest request frame sent
	// The walks from a term's owner to its other holders (one read of
	// successor lists each, a call a step), included in Lookups, Hops
	// and LookupBytes.
	WalkLookups, WalkHops, WalkBytes int
}

// Bytes is the query's bytes on the wire.
func (q QueryCost) Bytes() int { return q.LookupBytes + q.PostingBytes + q.VerifyBytes }

// searchRun is one SearchConfig on one built ring.
type searchRun struct {
	cfg    SearchConfig
	wc     *WireCounter
	c      *corpus
	rng    *rand.Rand
	at     int64
	from   int64
	first  map[int][2]int // a term's first request and reply sizes
	pages  [][2]string    // page texts for the captures verified
	record map[int][2]int // a page text's capture request and reply sizes
}

func (cfg SearchConfig) withDefaults() SearchConfig {
	cfg.PagesPerNode = cmp.Or(cfg.PagesPerNode, 10_000)
	cfg.K = cmp.Or(cfg.K, 3)
	cfg.Limit = cmp.Or(cfg.Limit, fts.DefaultLimit)
	cfg.Results = cmp.Or(cfg.Results, 10)
	cfg.Queries = cmp.Or(cfg.Queries, 1000)
	cfg.Corpus = cfg.Corpus.withDefaults()
	return cfg
}

// Search runs cfg.Queries queries of 1, 2 and 3 terms from random live
// nodes of the built ring s, whose transports wc counts, and returns
// each query's cost, by number of terms less one.
func (s *Sim) Search(ctx context.Context, cfg SearchConfig, wc *WireCounter) ([3][]QueryCost, error) {
	var out [3][]QueryCost
	if cfg.Wire == nil || wc == nil {
		return out, errors.New("sim search: no wire sizes or no wire counter")
	}
	cfg = cfg.withDefaults()
	live := s.Live()
	r := &searchRun{cfg: cfg, wc: wc, c: newCorpus(cfg.Corpus, int64(cfg.PagesPerNode)*int64(len(live))),
		rng: rand.New(rand.NewPCG(cfg.Seed, 38)), at: fts.Millis(s.Clock.Now()), from: captureTime(s.Clock.Now()),
		first: map[int][2]int{}, record: map[int][2]int{}}
	// Verified captures are drawn from 32 page texts, each sized once.
	for range 32 {
		t, b := r.c.pageText(r.rng)
		r.pages = append(r.pages, [2]string{t, b})
	}
	for k := 1; k <= 3; k++ {
		for range cfg.Queries {
			g := live[r.rng.IntN(len(live))]
			terms := make([]int, 0, k)
			for len(terms) < k {
				if t := r.c.draw(r.rng); !slices.Contains(terms, t) {
					terms = append(terms, t)
				}
			}
			q, err := r.query(ctx, g, terms)
			if err != nil {
				return out, err
			}
			out[k-1] = append(out[k-1], q)
		}
	}
	return out, nil
}

// query runs one query from gateway g as search.Engine and node/search
// run it: each term's postings from two of its holders (the rarest
// term's are the candidates; a term whose list was cut is asked again
// for the candidates' keys), then a capture of each of the first results.
func (r *searchRun) query(ctx context.Context, g *ring.Ring, terms []int) (QueryCost, error) {
	q := QueryCost{Terms: len(terms)}
	type list struct {
		rank     int
		df       int64
		docs     []int64
		complete bool
	}
	lists := make([]list, len(terms))
	for i, t := range terms {
		df := r.c.df(t)
		l := list{rank: t, df: df, docs: r.docs(t, min(df, int64(r.cfg.Limit))), complete: df <= int64(r.cfg.Limit)}
		lists[i] = l
		sz, ok := r.first[t]
		if !ok {
			pq := fts.PostingQuery{Term: word(t), At: r.at, Limit: r.cfg.Limit, AvgLen: r.avgLen()}
			sz[0], sz[1] = r.cfg.Wire.PostingQuery(pq, r.postingList(t, l.docs, df, l.complete))
			r.first[t] = sz
		}
		if err := r.ask(ctx, g, &q, word(t), sz); err != nil {
			return q, err
		}
	}
	slices.SortStableFunc(lists, func(a, b list) int { return int(a.df - b.df) })
	cands := slices.Clone(lists[0].docs)
	for _, l := range lists[1:] {
		if len(cands) == 0 {
			break
		}
		if l.complete {
			in := make(map[int64]bool, len(l.docs))
			for _, d := range l.docs {
				in[d] = true
			}
			cands = slices.DeleteFunc(cands, func(d int64) bool { return !in[d] })
			continue
		}
		// Asked again for the candidates' keys: each candidate holds the
		// term with the term's share of the pages.
		keys := make([]id.ID, len(cands))
		var found []int64
		for i, d := range cands {
			keys[i] = id.OfString(pageURL(d))
			if r.rng.Float64() < float64(l.df)/float64(r.c.n) {
				found = append(found, d)
			}
		}
		pq := fts.PostingQuery{Term: word(l.rank), At: r.at, Keys: keys, Limit: len(keys), AvgLen: r.avgLen()}
		var sz [2]int
		sz[0], sz[1] = r.cfg.Wire.PostingQuery(pq, r.postingList(l.rank, found, l.df, true))
		q.Second++
		if err := r.ask(ctx, g, &q, word(l.rank), sz); err != nil {
			return q, err
		}
		cands = found
	}
	q.Matches = len(cands)
	for _, d := range cands[:min(len(cands), r.cfg.Results)] {
		if err := r.verify(ctx, g, &q, d); err != nil {
			return q, err
		}
	}
	return q, nil
}

// docs returns the n pages of a term's first reply: drawn uniformly, the
// same for the same term.
func (r *searchRun) docs(rank int, n int64) []int64 {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(rank)))
	seen := make(map[int64]bool, n)
	out := make([]int64, 0, n)
	for int64(len(out)) < n {
		if d := rng.Int64N(r.c.n); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// avgLen is the mean document length the engine sends with a query.
func (r *searchRun) avgLen() float64 { return float64(r.cfg.Corpus.DocTerms) + 99.5 }

func (r *searchRun) postingList(rank int, docs []int64, df int64, complete bool) fts.PostingList {
	l := fts.PostingList{DF: df, Complete: complete, Postings: make([]fts.Posting, len(docs))}
	for i, d := range docs {
		l.Postings[i] = r.c.posting(rank, d, r.from)
	}
	return l
}

// ask sends one posting query for term from g, as nodesearch.Service
// does: the term's owner (this node's own virtual server, or a lookup),
// the successor list of the owner for its holders, and a request to each of the first two that
// is not g itself.
func (r *searchRun) ask(ctx context.Context, g *ring.Ring, q *QueryCost, term string, sz [2]int) error {
	owner, err := r.lookup(ctx, g, q, fts.TermKey(term), true)
	if err != nil {
		return err
	}
	// The other holders come from the owner's successor list, as
	// node/search's holders reads them: one call a step, usually one.
	r.wc.Reset()
	r.wc.On = true
	ns, err := g.SuccessorsFrom(ctx, owner, r.cfg.K)
	r.wc.On = false
	q.Lookups++
	q.Hops += r.wc.Calls
	q.WalkLookups++
	q.WalkHops += r.wc.Calls
	q.WalkBytes += r.wc.Bytes
	q.LookupBytes += r.wc.Bytes
	if err != nil && len(ns) < r.cfg.K {
		return fmt.Errorf("sim search: holders of %s: %w", term, err)
	}
	hs := make([]ring.Contact, len(ns))
	for i, n := range ns {
		hs[i] = n.Contact
	}
	for _, h := range hs[:min(askers, len(hs))] {
		if h.Peer == g.Self().Peer {
			continue
		}
		q.Requests++
		q.PostingBytes += sz[0] + sz[1]
		q.MaxRequest = max(q.MaxRequest, sz[0])
	}
	return nil
}

// verify fetches the capture of page d as node/resolve's Get does from a
// node that does not own it: a lookup of its URL key and a request to
// the first holder other than g (the owner, unless g is).
func (r *searchRun) verify(ctx context.Context, g *ring.Ring, q *QueryCost, d int64) error {
	q.Verified++
	u := pageURL(d)
	key := id.OfString(u)
	if _, mine := g.OwnerVnode(key); mine {
		return nil
	}
	owner, err := r.lookup(ctx, g, q, key, false)
	if err != nil {
		return err
	}
	cur := owner
	for step := 0; cur.Peer == g.Self().Peer && step < 32; step++ {
		if cur, err = r.lookup(ctx, g, q, cur.ID.AddPow2(0), false); err != nil || cur.ID == owner.ID {
			return nil
		}
	}
	p := int(d % int64(len(r.pages)))
	sz, ok := r.record[p]
	if !ok {
		sz[0], sz[1] = r.cfg.Wire.Capture(u, time.UnixMilli(r.from).UTC(), r.pages[p][0], r.pages[p][1])
		r.record[p] = sz
	}
	q.Requests++
	q.VerifyBytes += sz[0] + sz[1]
	q.MaxRequest = max(q.MaxRequest, sz[0])
	return nil
}

// lookup finds key's owner from g, counting the lookup's hops and bytes;
// with local set, a key one of g's virtual servers owns costs nothing
// (node/search asks its own tables first).
func (r *searchRun) lookup(ctx context.Context, g *ring.Ring, q *QueryCost, key id.ID, local bool) (ring.Node, error) {
	if local {
		if v, ok := g.OwnerVnode(key); ok {
			return v, nil
		}
	}
	r.wc.Reset()
	r.wc.On = true
	n, tr, err := g.LookupTrace(ctx, key)
	r.wc.On = false
	q.Lookups++
	q.Hops += tr.Hops
	q.MaxHops = max(q.MaxHops, tr.Hops)
	q.LookupBytes += r.wc.Bytes
	if err != nil {
		return n, fmt.Errorf("sim search: %w", err)
	}
	return n, nil
}
