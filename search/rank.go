package search

import (
	"container/heap"
	"math"
	"net/url"
	"sort"
	"strings"
)

// Ranking is bleve's BM25 (v2.6, scoring model "bm25"), so that a
// one-process bleve index of the same captures and the ring rank alike
// (docs/search.md, "Ranking"): a term weighs idf² (its query weight times
// its document weight, idf each; bleve's query norm is the same for every
// document and is left out) times the saturated square root of its
// frequency, normalized by the document's length:
//
//	score = Σ idf(t)² · √tf·k1 / (√tf + k1·(1 − b + b·len/avgLen))
//
// avgLen is the mean document length (DocStats.AvgLen), as in Lucene and
// the BM25 papers, not bleve's distinct terms over documents, which
// falls as a collection grows.
//
// BM25 parameters, those of bleve and Lucene.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// idf is BM25's inverse document frequency of a term found in df of n
// documents.
func idf(n, df int64) float64 {
	if n < df {
		n = df
	}
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// tfNorm is the saturated term frequency of tf occurrences in a document
// of docLen tokens.
func tfNorm(tf, docLen uint32, avgLen float64) float64 {
	t := math.Sqrt(float64(tf))
	return t * bm25K1 / (t + bm25K1*(1-bm25B+bm25B*float64(docLen)/avgLen))
}

// weight is a term's contribution to a document's score.
func weight(n, df int64, tf, docLen uint32, avgLen float64) float64 {
	w := idf(n, df)
	return w * w * tfNorm(tf, docLen, avgLen)
}

// impact orders one term's postings: its weight without the idf, which
// is the same for all of them.
func impact(p Posting, avgLen float64) float64 { return tfNorm(p.TF, p.DocLen, avgLen) }

// OnSite reports whether a URL's host is site or one of its subdomains
// (site lower case, without port).
func OnSite(rawURL, site string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	site = strings.TrimSuffix(strings.TrimPrefix(site, "."), ".")
	return h == site || strings.HasSuffix(h, "."+site)
}

// topK keeps the k postings of highest impact (ties: lower key first).
type topK struct {
	k int
	h postingHeap
}

type scored struct {
	p     Posting
	score float64
}

// before orders scored postings best first: higher score, then lower
// URL key, then later version.
func before(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if c := a.p.Key.Cmp(b.p.Key); c != 0 {
		return c < 0
	}
	return a.p.From > b.p.From
}

// postingHeap is a min-heap: its root is the worst kept posting.
type postingHeap []scored

func (h postingHeap) Len() int           { return len(h) }
func (h postingHeap) Less(i, j int) bool { return before(h[j], h[i]) }
func (h postingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *postingHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *postingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newTopK(k int) *topK { return &topK{k: k} }

func (t *topK) push(p Posting, score float64) {
	s := scored{p, score}
	if len(t.h) < t.k {
		heap.Push(&t.h, s)
		return
	}
	if before(s, t.h[0]) {
		t.h[0] = s
		heap.Fix(&t.h, 0)
	}
}

// sorted returns the kept postings best first.
func (t *topK) sorted() []Posting {
	s := append([]scored(nil), t.h...)
	sort.Slice(s, func(i, j int) bool { return before(s[i], s[j]) })
	out := make([]Posting, len(s))
	for i := range s {
		out[i] = s[i].p
	}
	return out
}
