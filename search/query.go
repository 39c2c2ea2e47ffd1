package search

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Source answers a term's posting query: a local Store, or the ring
// (the term's holders).
type Source interface {
	Postings(ctx context.Context, q PostingQuery) (PostingList, error)
}

// Stats gives the collection statistics as of a time (Unix ms).
type Stats interface {
	DocStats(ctx context.Context, at int64) (DocStats, error)
}

// Capture is the verified text of the version of a URL live at a time.
type Capture struct {
	URL  string
	Time time.Time // the version's capture time
	Doc  Doc
}

// Texts fetches the verified capture of url live at t. An error (the
// version is gone, blocked, purged, not verifiable or not text) drops
// the result: no posting alone makes a result.
type Texts interface {
	Text(ctx context.Context, url string, t time.Time) (Capture, error)
}

// Request is one search.
type Request struct {
	Query string
	At    time.Time // as of this time; zero: now
	Site  string    // only this host and its subdomains (as site: in Query)
	Limit int       // results per page (0: 10; at most 100)
	Page  int       // 1-based page, when Cursor is empty
	// Cursor resumes after the last result of a previous page (its Next).
	Cursor string
}

// Result is one verified hit.
type Result struct {
	URL     string    `json:"url"`
	Title   string    `json:"title"`
	Time    time.Time `json:"time"`    // capture time of the version shown
	Snippet string    `json:"snippet"` // HTML: escaped text, terms in <mark>
	Score   float64   `json:"score"`
}

// Response is a page of results.
type Response struct {
	Results []Result `json:"results"`
	// Next resumes after the last result; empty when there is no more.
	Next string `json:"next,omitempty"`
	// Matches counts the documents holding every term, before
	// verification (at most the candidate bound).
	Matches int      `json:"matches"`
	Terms   []string `json:"terms"`
	// Dropped counts candidates that failed verification (no verified
	// capture, or it lacks a term or phrase).
	Dropped int `json:"dropped"`
}

// Engine runs searches over a Source, verifying each result's text
// through Texts.
type Engine struct {
	Source Source
	Stats  Stats
	Texts  Texts
	// Now is the clock for requests without At (nil: time.Now).
	Now func() time.Time
	// Candidates bounds the postings fetched a term (0: DefaultLimit).
	Candidates int
	// Parallel bounds the captures verified at once (0: 8).
	Parallel int
}

// cursor is a result's place in the ranking order.
type cursor struct {
	Score float64 `json:"s"`
	Key   id.ID   `json:"k"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return cursor{}, fmt.Errorf("%w: cursor: %w", ErrBadQuery, err)
	}
	return c, nil
}

// candidate is a URL holding every term, with its postings.
type candidate struct {
	key   id.ID
	url   string
	score float64
	ps    []Posting
}

// Search runs one search.
func (e *Engine) Search(ctx context.Context, req Request) (Response, error) {
	pq, err := Parse(req.Query)
	if err != nil {
		return Response{}, err
	}
	if req.Site != "" {
		pq.Site = req.Site
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, 100)
	at := req.At
	if at.IsZero() {
		at = time.Now()
		if e.Now != nil {
			at = e.Now()
		}
	}
	atMs := Millis(at)
	st, err := e.Stats.DocStats(ctx, atMs)
	if err != nil {
		return Response{}, err
	}
	cands, dfs, err := e.candidates(ctx, pq, atMs, st.AvgLen())
	if err != nil {
		return Response{}, err
	}
	resp := Response{Terms: pq.Terms, Matches: len(cands)}
	n := max(st.N, 1)
	for i := range cands {
		c := &cands[i]
		for _, p := range c.ps {
			c.score += weight(n, dfs[p.Term], p.TF, p.DocLen, st.AvgLen())
		}
	}
	sort.Slice(cands, func(i, j int) bool { return candBefore(cands[i], cands[j]) })
	// Skip what earlier pages showed.
	skip := 0
	if req.Cursor != "" {
		cur, err := decodeCursor(req.Cursor)
		if err != nil {
			return Response{}, err
		}
		skip = sort.Search(len(cands), func(i int) bool {
			return candBefore(candidate{key: cur.Key, score: cur.Score}, cands[i])
		})
	} else if req.Page > 1 {
		skip = min(len(cands), (req.Page-1)*limit)
	}
	cands = cands[skip:]
	for len(cands) > 0 && len(resp.Results) < limit {
		batch := cands[:min(len(cands), limit-len(resp.Results))]
		cands = cands[len(batch):]
		rs, dropped, err := e.verify(ctx, pq, batch, at, n, dfs, st.AvgLen())
		if err != nil {
			return Response{}, err
		}
		resp.Dropped += dropped
		resp.Results = append(resp.Results, rs...)
		if len(resp.Results) == limit || len(cands) == 0 {
			last := batch[len(batch)-1]
			if len(cands) > 0 {
				resp.Next = cursor{Score: last.score, Key: last.key}.encode()
			}
		}
	}
	// A page shows its results by their verified scores (the same as the
	// postings' unless a holder lied about a frequency).
	sort.SliceStable(resp.Results, func(i, j int) bool { return resp.Results[i].Score > resp.Results[j].Score })
	return resp, nil
}

// candBefore orders candidates best first: higher score, then lower key.
func candBefore(a, b candidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.key.Less(b.key)
}

// candidates fetches each term's postings, rarest term first, and
// intersects them: the URLs live at the time that hold every term. It
// returns them with each term's document frequency.
func (e *Engine) candidates(ctx context.Context, pq Parsed, at int64, avgLen float64) ([]candidate, map[string]int64, error) {
	limit := e.Candidates
	if limit <= 0 {
		limit = DefaultLimit
	}
	lists := make([]PostingList, len(pq.Terms))
	errs := make([]error, len(pq.Terms))
	var wg sync.WaitGroup
	for i, t := range pq.Terms {
		wg.Go(func() {
			lists[i], errs[i] = e.Source.Postings(ctx, PostingQuery{Term: t, At: at, Site: pq.Site, Limit: limit, AvgLen: avgLen})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("search: postings: %w", err)
	}
	dfs := map[string]int64{}
	for i, t := range pq.Terms {
		dfs[t] = max(lists[i].DF, int64(len(lists[i].Postings)))
	}
	order := make([]int, len(pq.Terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(dfs[pq.Terms[a]] - dfs[pq.Terms[b]]) })
	// The rarest term's postings are the candidates.
	byKey := map[id.ID]*candidate{}
	var keys []id.ID
	for _, p := range lists[order[0]].Postings {
		if c, ok := byKey[p.Key]; ok {
			if p.From > c.ps[0].From {
				c.ps[0] = p
			}
			continue
		}
		byKey[p.Key] = &candidate{key: p.Key, url: p.URL, ps: []Posting{p}}
		keys = append(keys, p.Key)
	}
	for _, i := range order[1:] {
		if len(byKey) == 0 {
			break
		}
		l := lists[i]
		if !l.Complete {
			var err error
			l, err = e.Source.Postings(ctx, PostingQuery{Term: pq.Terms[i], At: at, Site: pq.Site, Keys: keys, Limit: len(keys), AvgLen: avgLen})
			if err != nil {
				return nil, nil, fmt.Errorf("search: postings: %w", err)
			}
		}
		found := map[id.ID]Posting{}
		for _, p := range l.Postings {
			if q, ok := found[p.Key]; !ok || p.From > q.From {
				found[p.Key] = p
			}
		}
		keys = keys[:0]
		for k, c := range byKey {
			p, ok := found[k]
			if !ok {
				delete(byKey, k)
				continue
			}
			c.ps = append(c.ps, p)
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b id.ID) int { return a.Cmp(b) })
	}
	out := make([]candidate, 0, len(byKey))
	for _, c := range byKey {
		out = append(out, *c)
	}
	return out, dfs, nil
}

// verify fetches each candidate's capture, checks it holds every term and
// phrase, scores it from its own text and makes its snippet. It returns
// the verified results in order and how many it dropped.
func (e *Engine) verify(ctx context.Context, pq Parsed, cands []candidate, at time.Time, n int64, dfs map[string]int64, avgLen float64) ([]Result, int, error) {
	par := e.Parallel
	if par <= 0 {
		par = 8
	}
	out := make([]*Result, len(cands))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, c := range cands {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cp, err := e.Texts.Text(ctx, c.url, at)
			if err != nil {
				return
			}
			if r, ok := check(pq, cp, n, dfs, avgLen); ok {
				out[i] = &r
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var rs []Result
	for _, r := range out {
		if r != nil {
			rs = append(rs, *r)
		}
	}
	return rs, len(cands) - len(rs), nil
}

// check verifies a capture against a query and returns its result.
func check(pq Parsed, cp Capture, n int64, dfs map[string]int64, avgLen float64) (Result, bool) {
	title, body := Analyze(cp.Doc.Title), Analyze(cp.Doc.Text)
	tf := map[string]uint32{}
	for _, t := range title {
		tf[t.Term]++
	}
	for _, t := range body {
		tf[t.Term]++
	}
	docLen := uint32(len(title) + len(body))
	score := 0.0
	for _, t := range pq.Terms {
		if tf[t] == 0 {
			return Result{}, false
		}
		score += weight(n, dfs[t], tf[t], docLen, avgLen)
	}
	for _, ph := range pq.Phrases {
		if !hasPhrase(title, ph) && !hasPhrase(body, ph) {
			return Result{}, false
		}
	}
	t := cp.Doc.Title
	if t == "" {
		t = cp.URL
	}
	return Result{URL: cp.URL, Title: t, Time: cp.Time, Snippet: Snippet(cp.Doc.Text, body, pq.Terms), Score: score}, true
}

// Getter returns the version of a URL live at a time and its capture:
// archive.Store.Get, or the node's resolver (verified from any holder).
type Getter interface {
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// ArchiveTexts is the Texts of a Getter.
type ArchiveTexts struct{ Archive Getter }

// ErrNoText reports a version with no text to search.
var ErrNoText = errors.New("search: version has no text")

// Text returns the text of url's version live at t.
func (a ArchiveTexts) Text(ctx context.Context, url string, t time.Time) (Capture, error) {
	v, c, err := a.Archive.Get(ctx, url, t)
	if err != nil {
		return Capture{}, err
	}
	d, ok := ExtractCapture(c)
	if !ok {
		return Capture{}, ErrNoText
	}
	return Capture{URL: v.URL, Time: v.Time, Doc: d}, nil
}
