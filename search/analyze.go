package search

import (
	"fmt"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"
)

// MaxTermLen bounds a term's bytes: longer tokens (base64 runs, hashes)
// are not indexed, so a posting key stays small.
const MaxTermLen = 64

// Token is one indexed word of a text: its normalized term, its place
// among the text's tokens (stop words keep their places, so a phrase's
// relative positions survive their removal) and its bytes in the text.
type Token struct {
	Term       string
	Pos        int // 1-based token position
	Start, End int // byte offsets in the analyzed text
}

var (
	analyzerOnce sync.Once
	analyzer     analysis.Analyzer
	analyzerErr  error
)

// english returns bleve's English analyzer: Unicode word segmentation
// (UAX #29; ASCII text by a fast path of the same result), the
// possessive filter, lower-casing, the English stop list and the Porter
// stemmer. Queries and documents share it, so both sides
// reduce a word to the same term.
func english() (analysis.Analyzer, error) {
	analyzerOnce.Do(func() {
		analyzer, analyzerErr = registry.NewCache().AnalyzerNamed(en.AnalyzerName)
		if analyzerErr != nil {
			analyzerErr = fmt.Errorf("search: english analyzer: %w", analyzerErr)
			return
		}
		// The same analyzer, its tokenizer given a fast path for ASCII
		// text (tokenize.go) that yields the same tokens.
		if d, ok := analyzer.(*analysis.DefaultAnalyzer); ok {
			fast := *d
			fast.Tokenizer = asciiTokenizer{Unicode: d.Tokenizer}
			analyzer = &fast
		}
	})
	return analyzer, analyzerErr
}

// Analyze splits text into its index terms in text order. It is safe for
// concurrent use.
func Analyze(text string) []Token {
	a, err := english()
	if err != nil {
		// The analyzer is built from bleve's compiled-in registry: it
		// fails only if the binary was built without it.
		panic(err)
	}
	ts := a.Analyze([]byte(text))
	out := make([]Token, 0, len(ts))
	for _, t := range ts {
		if len(t.Term) == 0 || len(t.Term) > MaxTermLen {
			continue
		}
		out = append(out, Token{Term: string(t.Term), Pos: t.Position, Start: t.Start, End: t.End})
	}
	return out
}

// Terms returns the distinct terms of text in first-occurrence order.
func Terms(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Analyze(text) {
		if !seen[t.Term] {
			seen[t.Term] = true
			out = append(out, t.Term)
		}
	}
	return out
}
