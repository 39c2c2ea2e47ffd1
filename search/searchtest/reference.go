package searchtest

import (
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/herod-archive/herod/search"
)

// Reference is a one-process bleve index (BM25 scoring, English
// analyzer) of the versions of a corpus live on one day: what herod's
// ranking is compared with.
type Reference struct {
	idx bleve.Index
	// MeanLength, when set, gives bleve the collection's mean field
	// length (analyzed tokens per document) as BM25's average length,
	// through its statistics for searching across indexes
	// (search.BM25Stats in PreSearchData), in place of its own
	// vocabulary over documents (docs/search.md, "Ranking").
	MeanLength   bool
	docs, tokens int
}

// refDoc is a page as the reference indexes it: the title and text
// herod extracts (search.ExtractCapture) in one field, as herod counts
// them together; the comparison is of rankings, not of extraction.
type refDoc struct {
	Text string `json:"text"`
}

// NewReference indexes the pages live on day d in a bleve index in dir.
func NewReference(dir string, c *Corpus, d int) (*Reference, error) {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = en.AnalyzerName
	m.ScoringModel = index.BM25Scoring
	idx, err := bleve.New(dir, m)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	r := &Reference{idx: idx}
	b := idx.NewBatch()
	for i, p := range c.Pages {
		cp := c.Capture(i, d)
		doc, ok := search.ExtractCapture(&cp)
		if !ok {
			continue
		}
		text := doc.Title + " " + doc.Text
		r.docs++
		r.tokens += len(search.Analyze(text))
		if err := b.Index(p.URL, refDoc{Text: text}); err != nil {
			idx.Close()
			return nil, fmt.Errorf("reference: %w", err)
		}
	}
	if err := idx.Batch(b); err != nil {
		idx.Close()
		return nil, fmt.Errorf("reference: %w", err)
	}
	return r, nil
}

// Close closes the index.
func (r *Reference) Close() error { return r.idx.Close() }

// Top returns the URLs of the k best matches of q holding every word.
func (r *Reference) Top(q string, k int) ([]string, error) {
	mq := query.NewMatchQuery(q)
	mq.SetField("text")
	mq.SetOperator(query.MatchQueryOperatorAnd)
	req := bleve.NewSearchRequestOptions(mq, k, 0, false)
	req.SortBy([]string{"-_score", "_id"}) // ties in a fixed order
	if r.MeanLength {
		// bleve's average length is ⌈FieldCardinality / DocCount⌉.
		req.PreSearchData = map[string]any{bsearch.BM25PreSearchDataKey: &bsearch.BM25Stats{
			DocCount:         float64(r.docs),
			FieldCardinality: map[string]int{"text": r.tokens},
		}}
	}
	res, err := r.idx.Search(req)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.ID)
	}
	return out, nil
}
